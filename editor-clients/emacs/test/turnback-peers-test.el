;;; turnback-peers-test.el --- turnback.el beside eglot, without eglot, installed as the docs say  -*- lexical-binding: t; -*-

;;; Commentary:

;; Issue 40: turnback.el is a `jsonrpc-process-connection' of its own and
;; needs no eglot.  These tests prove it three ways:
;; - eglot managing a Python buffer with the real pylsp (Debian's
;;   python3-pylsp) while turnback runs in the same project: a turn and a
;;   rewind, pylsp sees the rewound text, each survives the other's stop;
;; - an Emacs in which eglot cannot be loaded at all runs turnback from
;;   the docs' init-file lines: a turn, a rewind, a stop;
;; - the docs' `package-install-file' of the package folder into a fresh
;;   `package-user-dir', with no package archive, then `turnback-start'.
;; The last two start another Emacs: TURNBACK_TEST_EMACS (run-tests.sh
;; sets it to the Emacs that runs the suite).

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'turnback)
(require 'turnback-test)

(defconst turnback-peers--package-dir
  (file-name-directory (directory-file-name
                        (file-name-directory (or load-file-name buffer-file-name))))
  "The package's folder, editor-clients/emacs/.")

(defun turnback-peers--eglot-or-skip ()
  "Load eglot; without it (or pylsp), skip, unless TURNBACK_REQUIRE_EGLOT is set."
  (let ((required (equal (getenv "TURNBACK_REQUIRE_EGLOT") "1")))
    (unless (and (require 'eglot nil t) (executable-find "pylsp"))
      (if required
          (ert-fail "eglot and pylsp are required here (TURNBACK_REQUIRE_EGLOT=1)")
        (ert-skip "no eglot or no pylsp")))))

(declare-function eglot "eglot")
(declare-function eglot-current-server "eglot")
(declare-function eglot-managed-p "eglot")
(declare-function eglot-shutdown "eglot")

(defun turnback-peers--symbols (lsp file)
  "The names of the symbols the language server LSP sees in FILE (nil when it fails)."
  (ignore-errors
    (mapcar (lambda (s) (plist-get s :name))
            (jsonrpc-request lsp :textDocument/documentSymbol
                             (list :textDocument (list :uri (turnback--path-to-uri file)))
                             :timeout 10))))

(ert-deftest turnback-peers-eglot-and-pylsp-beside-turnback ()
  "eglot manages a Python buffer with pylsp while turnback runs: a turn and a rewind through
the same buffer; pylsp sees the rewound text; each keeps running when the other stops."
  (turnback-peers--eglot-or-skip)
  (turnback-test--with-workspace ('(("app.py" . "def one():\n    return 1\n")))
    (let* ((file (expand-file-name "app.py" root))
           (buffer (find-file-noselect file))
           lsp)
      (with-current-buffer buffer
        (python-mode)
        (eglot '(python-mode) (cons 'transient root) 'eglot-lsp-server '("pylsp") "python")
        (should (turnback-test--wait (lambda () (setq lsp (eglot-current-server))) 30)))
      (should (turnback-test--wait (lambda () (member "one" (turnback-peers--symbols lsp file))) 30))
      (should-not (eq lsp server))
      (should-not (rassq lsp turnback--servers))
      ;; A turn through the eglot-managed buffer.
      (turnback-test--turn server "rename"
                           (lambda ()
                             (with-current-buffer buffer
                               (erase-buffer)
                               (insert "def two():\n    return 2\n")
                               (save-buffer))))
      (should (turnback-test--wait (lambda () (member "two" (turnback-peers--symbols lsp file))) 30))
      ;; Rewind before it: the file, the buffer and pylsp go back to `one'.
      (turnback--rewind server (list :kind "beforePrompt" :turn 1))
      (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
      (should (equal (turnback-test--read file) "def one():\n    return 1\n"))
      (should (equal (with-current-buffer buffer (buffer-string)) "def one():\n    return 1\n"))
      (should (turnback-test--wait (lambda () (member "one" (turnback-peers--symbols lsp file))) 30))
      (should (with-current-buffer buffer (eglot-managed-p)))
      ;; turnback's stop leaves eglot running, and eglot's leaves nothing of turnback's behind.
      (turnback-stop server)
      (should (jsonrpc-running-p lsp))
      (should (member "one" (turnback-peers--symbols lsp file)))
      ;; From the managed buffer, as M-x eglot-shutdown there (eglot 1.17 fails from another buffer).
      (with-current-buffer buffer (eglot-shutdown lsp))
      (should-not (jsonrpc-running-p lsp)))))

;;;; Another Emacs

(defun turnback-peers--emacs ()
  "The Emacs to start for a test (the one running the suite by default)."
  (or (getenv "TURNBACK_TEST_EMACS") (expand-file-name invocation-name invocation-directory)))

(defun turnback-peers--run-emacs (args script)
  "Run the Emacs in batch with ARGS, then SCRIPT (forms, as a string).
Return (EXIT-CODE . OUTPUT)."
  (let ((file (make-temp-file "turnback-peers-" nil ".el" script)))
    (unwind-protect
        (with-temp-buffer
          (let ((code (apply #'call-process (turnback-peers--emacs) nil t nil
                             (append '("-Q" "--batch") args (list "-l" file)))))
            (cons code (buffer-string))))
      (delete-file file))))

(defun turnback-peers--turn-and-rewind-forms (root)
  "Forms that start turnback in ROOT, run a turn, rewind it and stop, printing RESULT lines."
  (format "%S"
          `(let* ((root ,root)
                  (file (expand-file-name "a.txt" root))
                  (server (turnback-start root)))
             (let ((turn (plist-get (turnback-request :turnback/turn/begin
                                                      (list :kind "chat" :prompt "p") server)
                                    :turn)))
               (with-current-buffer (find-file-noselect file)
                 (erase-buffer) (insert "two\n") (save-buffer))
               (turnback-request :turnback/turn/settle (list :turn turn :status "settled") server))
             (turnback--rewind server (list :kind "beforePrompt" :turn 1))
             (princ (format "RESULT commit %s\n" (plist-get (turnback-confirm-commit) :status)))
             (princ (format "RESULT file [%s]\n" (with-temp-buffer (insert-file-contents file)
                                                                   (string-trim-right (buffer-string)))))
             (turnback-stop server)
             (princ (format "RESULT stopped %s\n" (not (jsonrpc-running-p server))))
             (princ (format "RESULT eglot-loaded %s\n" (featurep 'eglot)))
             (princ (format "RESULT turnback-from %s\n" (locate-library "turnback")))
             (princ (format "RESULT C-c t s %s\n" (key-binding (kbd "C-c t s")))))))

(defmacro turnback-peers--with-root (&rest body)
  "Run BODY with `root' a fresh workspace holding a.txt (\"one\")."
  (declare (indent 0))
  `(progn
     (skip-unless (turnback-test--server-available-p))
     (let ((root (file-name-as-directory (file-truename (make-temp-file "turnback-ert-" t)))))
       (unwind-protect
           (progn (turnback-test--write (expand-file-name "a.txt" root) "one\n") ,@body)
         (delete-directory root t)))))

(defun turnback-peers--check-result (result root)
  "Check the RESULT lines of `turnback-peers--turn-and-rewind-forms' run in ROOT."
  (let ((out (cdr result)))
    (unless (eql (car result) 0) (ert-fail (list "the other Emacs failed" out)))
    (should (string-search "RESULT commit committed" out))
    (should (string-search "RESULT file [one]" out))
    (should (string-search "RESULT stopped t" out))
    (should (string-search "RESULT eglot-loaded nil" out))
    (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "one\n"))
    out))

(ert-deftest turnback-peers-an-emacs-without-eglot ()
  "In an Emacs where eglot cannot be loaded, the docs' init-file lines then a turn, a rewind
and a stop all work."
  (turnback-peers--with-root
    (let* ((shadow (make-temp-file "turnback-no-eglot-" t))
           (program (executable-find (car (turnback-test--server-command)))))
      (unwind-protect
          (progn
            (turnback-test--write (expand-file-name "eglot.el" shadow)
                                  "(error \"eglot is not installed in this Emacs\")\n")
            (let* ((init (format "%S"
                                 `(progn
                                    (princ (format "RESULT eglot-absent %s\n"
                                                   (condition-case nil (progn (require 'eglot) nil)
                                                     (error t))))
                                    ;; The docs' lines (docs/clients.md, Emacs, Install):
                                    (add-to-list 'load-path ,turnback-peers--package-dir)
                                    (require 'turnback)
                                    (global-set-key (kbd "C-c t") 'turnback-command-map)
                                    (setq turnback-server-command
                                          '(,program ,@(cdr (turnback-test--server-command)))))))
                   (out (turnback-peers--check-result
                         (turnback-peers--run-emacs (list "-L" shadow)
                                                    (concat init "\n" (turnback-peers--turn-and-rewind-forms root)))
                         root)))
              (should (string-search "RESULT eglot-absent t" out))
              (should (string-search "RESULT C-c t s turnback-start" out))))
        (delete-directory shadow t)))))

(ert-deftest turnback-peers-package-install-file-as-the-docs-say ()
  "The docs' `M-x package-install-file RET .../editor-clients/emacs/ RET' into a fresh
`package-user-dir' with no package archive (no eglot from anywhere), then `turnback-start'."
  (turnback-peers--with-root
    (let ((elpa (make-temp-file "turnback-elpa-" t))
          (program (executable-find (car (turnback-test--server-command)))))
      (unwind-protect
          (let* ((install (format "%S"
                                  `(progn
                                     (require 'package)
                                     (setq package-user-dir ,elpa package-archives nil)
                                     (package-initialize)
                                     (package-install-file ,turnback-peers--package-dir)
                                     (princ (format "RESULT installed %s\n" (package-installed-p 'turnback)))
                                     (setq turnback-server-command
                                           '(,program ,@(cdr (turnback-test--server-command)))))))
                 (out (turnback-peers--check-result
                       (turnback-peers--run-emacs nil (concat install "\n" (turnback-peers--turn-and-rewind-forms root)))
                       root)))
            (should (string-search "RESULT installed t" out))
            (should (string-match (format "RESULT turnback-from %s/turnback-0\\.1\\.0/turnback\\.elc?\n"
                                          (regexp-quote elpa))
                                  out))
            ;; Only the package's own files were installed: no tests, no pkg of eglot.
            (let ((dir (car (directory-files elpa t "\\`turnback-"))))
              (should dir)
              (should-not (file-exists-p (expand-file-name "test" dir)))
              (should-not (directory-files elpa nil "\\`eglot"))))
        (delete-directory elpa t)))))

(provide 'turnback-peers-test)
;;; turnback-peers-test.el ends here
