;;; turnback-install-test.el --- the Emacs package from dist/, and its server  -*- lexical-binding: t; no-byte-compile: t; -*-

;; Run by .ci/release.sh (test/run-dist-tests.sh) in a fresh `user-emacs-directory' with no
;; `turnback' on exec-path, against the archive tools/build-dist wrote:
;;   TURNBACK_DIST   the dist/ folder (its emacs/ subfolder is the package.el archive)
;; The bad-input tests need no network and no dist/.

(require 'ert)
(require 'package)
(require 'cl-lib)

(defvar turnback-test-install--dist (getenv "TURNBACK_DIST"))

(defun turnback-test-install--tmp (name)
  (make-temp-file (format "turnback-%s-" name) t))

(defun turnback-test-install--package ()
  "Install turnback from the dist/ archive into this (fresh) Emacs, once."
  (unless (assq 'turnback package-alist)
    (should turnback-test-install--dist)
    (setq package-archives `(("turnback-dist" . ,(expand-file-name "emacs/" turnback-test-install--dist))))
    (package-initialize)
    (package-refresh-contents)
    (package-install 'turnback))
  (require 'turnback)
  (require 'turnback-install))

(ert-deftest turnback-install-test-archive-carries-the-wheel ()
  "The package came from the archive, not from a checkout: its install source is the wheel beside it."
  (turnback-test-install--package)
  (let ((dir (file-name-directory (locate-library "turnback-install"))))
    (should (string-prefix-p (file-truename package-user-dir) (file-truename dir)))
    (should (eq 'wheel (car (turnback-install-source))))
    (should (string-match-p "turnback-.*-py3-none-any\\.whl\\'" (cdr (turnback-install-source))))))

(ert-deftest turnback-install-test-install-and-start ()
  "No server on exec-path: turnback-start says to install; turnback-install-server installs; it starts."
  (turnback-test-install--package)
  (should-not (executable-find "turnback"))
  (let* ((turnback-install-directory (turnback-test-install--tmp "install"))
         (turnback-server-command '("turnback" "serve"))
         (project (turnback-test-install--tmp "project"))
         (server nil))
    (unwind-protect
        (progn
          (let ((err (should-error (turnback-start project) :type 'user-error)))
            (should (string-match-p "turnback-install-server" (cadr err))))
          (let ((program (turnback-install-server nil t)))
            (should (file-executable-p program))
            (should (string-prefix-p (expand-file-name turnback-install-directory) program))
            (should (equal turnback-server-command (list program "serve"))))
          (with-temp-file (expand-file-name "a.txt" project) (insert "one\n"))
          (setq server (turnback-start project))
          (should (jsonrpc-running-p server))
          (let ((info (turnback-request :turnback/session/info nil server)))
            (should (plist-get info :sessionId))))
      (when server (ignore-errors (turnback-stop server)))
      (delete-directory turnback-install-directory t)
      (delete-directory project t))))

(ert-deftest turnback-install-test-previous-install-is-adopted ()
  "An install whose setting was not saved (a new Emacs session) is found by turnback-start."
  (turnback-test-install--package)
  (let* ((turnback-install-directory (turnback-test-install--tmp "adopt"))
         (fake (expand-file-name "venv/bin/turnback" turnback-install-directory))
         (turnback-server-command '("turnback" "serve")))
    (unwind-protect
        (progn
          (make-directory (file-name-directory fake) t)
          (with-temp-file fake (insert "#!/bin/sh\n"))
          (set-file-modes fake #o755)
          (should (equal (turnback--executable turnback-server-command) fake))
          (should (equal turnback-server-command (list fake "serve"))))
      (delete-directory turnback-install-directory t))))

(ert-deftest turnback-install-test-python-3.9-is-refused ()
  "Only a Python 3.9: one clear message with the next step, nothing made."
  (turnback-test-install--package)
  (let* ((fake-python (make-temp-file "python3.9-" nil nil "#!/bin/sh\necho 3 9\n"))
         (turnback-install-python fake-python)
         (turnback-install-directory (expand-file-name "never" (turnback-test-install--tmp "py39"))))
    (set-file-modes fake-python #o755)
    (unwind-protect
        (let ((err (should-error (turnback-install-server nil t) :type 'user-error)))
          (should (string-match-p "needs Python 3.10 or newer" (cadr err)))
          (should (string-match-p "is 3\\.9" (cadr err)))
          (should (string-match-p "turnback-install-python" (cadr err)))
          (should-not (file-exists-p turnback-install-directory)))
      (delete-file fake-python))))

(ert-deftest turnback-install-test-no-python-at-all ()
  (turnback-test-install--package)
  (let ((exec-path (list (turnback-test-install--tmp "empty")))
        (turnback-install-python nil)
        (turnback-install-directory (expand-file-name "never" temporary-file-directory)))
    (let ((err (should-error (turnback-install-server nil t) :type 'user-error)))
      (should (string-match-p "none was found on exec-path" (cadr err)))
      (should-not (file-exists-p turnback-install-directory)))))

(ert-deftest turnback-install-test-offline-leaves-nothing ()
  "The registry unreachable: the install fails with the next step and the new environment is gone."
  (turnback-test-install--package)
  (let* ((turnback-install-directory (turnback-test-install--tmp "offline"))
         (turnback-server-command '("turnback" "serve"))
         (process-environment (append '("PIP_INDEX_URL=http://127.0.0.1:9/simple" "PIP_EXTRA_INDEX_URL="
                                        "PIP_FIND_LINKS=" "PIP_RETRIES=0" "PIP_TIMEOUT=2"
                                        "PIP_NO_CACHE_DIR=1" "PIP_CONFIG_FILE=/dev/null")
                                      process-environment)))
    (unwind-protect
        (let ((err (should-error (turnback-install-server nil t))))
          (should (string-match-p "installing the server failed" (cadr err)))
          (should (string-match-p "package registry could not be reached" (cadr err)))
          (should-not (file-exists-p (expand-file-name "venv" turnback-install-directory)))
          (should (equal turnback-server-command '("turnback" "serve"))))
      (delete-directory turnback-install-directory t))))

(provide 'turnback-install-test)
;;; turnback-install-test.el ends here
