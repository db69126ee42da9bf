;;; turnback-vc-test.el --- package-vc-install from a checkout, and its server  -*- lexical-binding: t; no-byte-compile: t; -*-

;; Run by test/run-dist-tests.sh (in .ci/release.sh) in a fresh `user-emacs-directory' with no
;; `turnback' on exec-path, when TURNBACK_VC_SOURCE names a git checkout of this repository
;; (a path or URL).  Emacs 29 brought package-vc: skipped on 28.

(require 'ert)
(require 'package)
(require 'package-vc nil t)

(ert-deftest turnback-vc-test-install-from-checkout-then-its-server ()
  "package-vc-install with :lisp-dir: the package loads from the checkout, byte-compiled with no
error, turnback-install-server installs that checkout, and turnback-start runs it."
  (skip-unless (fboundp 'package-vc-install))
  (let ((source (getenv "TURNBACK_VC_SOURCE")))
    (should source)
    (setq package-archives nil)
    (package-initialize)
    (package-vc-install `(turnback :url ,source :lisp-dir "editor-clients/emacs" :vc-backend Git))
    (should (package-vc-p (cadr (assq 'turnback package-alist))))
    (should-not (with-current-buffer (get-buffer-create byte-compile-log-buffer)
                  (goto-char (point-min))
                  (re-search-forward "^[^ \n]+\\.el:[0-9:]+ Error: " nil t)))
    (require 'turnback)
    (require 'turnback-install)
    (should (string-prefix-p (file-truename package-user-dir) (file-truename (locate-library "turnback"))))
    (should (eq 'checkout (car (turnback-install-source))))
    (should-not (executable-find "turnback"))
    (let* ((turnback-install-directory (make-temp-file "turnback-vc-install-" t))
           (turnback-server-command '("turnback" "serve"))
           (project (make-temp-file "turnback-vc-project-" t))
           (server nil))
      (unwind-protect
          (progn
            (should (file-executable-p (turnback-install-server nil t)))
            (with-temp-file (expand-file-name "a.txt" project) (insert "one\n"))
            (setq server (turnback-start project))
            (should (plist-get (turnback-request :turnback/session/info nil server) :sessionId)))
        (when server (ignore-errors (turnback-stop server)))
        (delete-directory turnback-install-directory t)
        (delete-directory project t)))))

(provide 'turnback-vc-test)
;;; turnback-vc-test.el ends here
