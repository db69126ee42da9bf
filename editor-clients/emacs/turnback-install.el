;;; turnback-install.el --- Get the turnback server into a private environment  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The turnback authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; `M-x turnback-install-server' makes a Python virtual environment of
;; its own (under `user-emacs-directory', see
;; `turnback-install-directory'), installs the turnback server into it
;; and sets `turnback-server-command' to its `turnback' (saved with
;; Customize when Emacs has an init file).  Run it again to update.
;;
;; What it installs, first found wins:
;;   1. the wheel that came with this package (the package.el archive
;;      that tools/build-dist writes puts turnback-VERSION-py3-none-any.whl
;;      beside this file);
;;   2. the checkout this file lives in (package-vc-install, or a
;;      load-path entry in a clone): the folder two levels up;
;;   3. turnback from the package registry, at this package's version.
;; Its dependencies (compiled ones among them) come from the registry.
;;
;; Nothing is left half-installed: a new environment whose install
;; fails is deleted; an update that fails leaves the old one working.
;; `turnback-start' offers this command when it finds no server.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(declare-function package-desc-version "package" (desc))
(declare-function package-version-join "package" (vlist))
(defvar package-alist)

(defvar turnback-server-command)

(defgroup turnback-install nil
  "Installing the turnback server from Emacs."
  :group 'turnback
  :prefix "turnback-install-")

(defcustom turnback-install-directory (locate-user-emacs-file "turnback/")
  "Where `turnback-install-server' keeps its virtual environment (in venv/)."
  :type 'directory)

(defcustom turnback-install-python nil
  "The Python (3.10 or newer) to make the environment with.
nil: the first of python3.13, python3.12, python3.11, python3.10 and
python3 on `exec-path' that is 3.10 or newer."
  :type '(choice (const :tag "Find one" nil) (file :tag "Program")))

(defconst turnback-install--here
  (file-name-directory (or load-file-name buffer-file-name default-directory))
  "The folder this file was loaded from.")

(defconst turnback-install--pythons
  '("python3.13" "python3.12" "python3.11" "python3.10" "python3")
  "Interpreters looked for, newest first.")

(defvar turnback-install--running nil
  "The install process while one runs.")

(defun turnback-install--venv ()
  "The private environment's folder."
  (expand-file-name "venv/" turnback-install-directory))

(defun turnback-install-program ()
  "The `turnback' of the private environment."
  (expand-file-name "bin/turnback" (turnback-install--venv)))

(defun turnback-install--python-version (program)
  "PROGRAM's version as (MAJOR MINOR), or nil when it does not run."
  (with-temp-buffer
    (when (eq 0 (ignore-errors
                  (call-process program nil t nil "-c"
                                "import sys; print('%d %d' % sys.version_info[:2])")))
      (let ((words (split-string (buffer-string))))
        (when (= (length words) 2)
          (mapcar #'string-to-number words))))))

(defun turnback-install--find-python ()
  "A usable Python as (PROGRAM . (MAJOR MINOR)), or nil."
  (cl-dolist (name (if turnback-install-python
                       (list turnback-install-python)
                     turnback-install--pythons))
    (when-let* ((program (executable-find name))
                (version (turnback-install--python-version program)))
      (when (version-list-<= '(3 10) version)
        (cl-return (cons program version))))))

(defun turnback-install--python ()
  "The Python to use, or a `user-error' with the next step."
  (or (turnback-install--find-python)
      (let ((found (delq nil (mapcar (lambda (name)
                                       (when-let* ((p (executable-find name))
                                                   (v (turnback-install--python-version p)))
                                         (format "%s is %d.%d" p (car v) (cadr v))))
                                     (if turnback-install-python
                                         (list turnback-install-python)
                                       turnback-install--pythons)))))
        (user-error "turnback: the server needs Python 3.10 or newer, and %s.  \
Install one (e.g. sudo apt install python3), or set `turnback-install-python' to its path, \
then run M-x turnback-install-server again"
                    (if found (string-join found ", ")
                      "none was found on exec-path")))))

(defun turnback-install--package-version ()
  "This package's version as a string, when package.el installed it."
  (when-let* ((desc (and (boundp 'package-alist) (cadr (assq 'turnback package-alist)))))
    (package-version-join (package-desc-version desc))))

(defun turnback-install-source ()
  "What to install, as (KIND . SPEC).
A wheel beside this file, else the checkout it lives in, else the registry."
  (let ((wheels (directory-files turnback-install--here t "\\`turnback-.*-py3-none-any\\.whl\\'"))
        (checkout (expand-file-name "../../" turnback-install--here)))
    (cond
     (wheels (cons 'wheel (car (last (sort wheels #'string<)))))
     ((and (file-exists-p (expand-file-name "pyproject.toml" checkout))
           (file-exists-p (expand-file-name "server/turnback/__init__.py" checkout)))
      (cons 'checkout (directory-file-name checkout)))
     (t (cons 'registry (if-let ((v (turnback-install--package-version)))
                            (concat "turnback==" v)
                          "turnback"))))))

(defun turnback-install--buffer ()
  (let ((buffer (get-buffer-create "*turnback-install*")))
    (with-current-buffer buffer
      (setq buffer-read-only nil)
      (goto-char (point-max)))
    buffer))

(defun turnback-install--run (steps done fail)
  "Run STEPS, a list of (DESCRIPTION . ARGV), one after the other.
Call DONE when all succeed, FAIL with the failed step's description otherwise."
  (if (null steps)
      (funcall done)
    (let* ((step (car steps))
           (buffer (turnback-install--buffer)))
      (with-current-buffer buffer
        (insert (format "\n$ %s\n" (mapconcat #'shell-quote-argument (cdr step) " "))))
      (message "turnback: %s..." (car step))
      (setq turnback-install--running
            (make-process
             :name "turnback-install"
             :buffer buffer
             :command (cdr step)
             :connection-type 'pipe
             :noquery t
             :sentinel
             (lambda (proc _event)
               (unless (process-live-p proc)
                 (if (eq 0 (process-exit-status proc))
                     (turnback-install--run (cdr steps) done fail)
                   (setq turnback-install--running nil)
                   (funcall fail (car step))))))))))

(defun turnback-install--hint (failed)
  "The next step for the user after FAILED, read from the install buffer."
  (let ((text (with-current-buffer (turnback-install--buffer) (buffer-string))))
    (cond
     ((string-match-p "ensurepip is not available\\|No module named venv\\|python3-venv" text)
      "Python's venv module is missing: install it (e.g. sudo apt install python3-venv)")
     ((string-match-p "Could not find a version\\|No matching distribution\\|Failed to establish\\|Temporary failure in name resolution\\|Network is unreachable\\|ConnectionError\\|Max retries exceeded" text)
      "the package registry could not be reached or has no matching release: connect to the network (or set up pip's index), then try again")
     ((string-match-p "Permission denied\\|Read-only file system" text)
      (format "%s cannot be written: set `turnback-install-directory' to a writable folder"
              (abbreviate-file-name turnback-install-directory)))
     (t (format "%s failed" failed)))))

(defun turnback-install--adopt (program)
  "Make PROGRAM the server command, and save it when Emacs has an init file."
  (let ((command (list program "serve")))
    (setq turnback-server-command command)
    (when (and (not noninteractive) (or custom-file user-init-file))
      (condition-case nil
          (customize-save-variable 'turnback-server-command command)
        (error (message "turnback: could not save `turnback-server-command'; it is set for this session"))))))

;;;###autoload
(defun turnback-install-server (&optional callback wait)
  "Install the turnback server into a private environment and use it.
The environment is `turnback-install-directory'/venv; running this again
updates it.  CALLBACK, when given, is called with the program once it
works.  With WAIT non-nil (from Lisp), return only when it is done and
signal an error when it failed."
  (interactive)
  (when (process-live-p turnback-install--running)
    (user-error "turnback: an install is already running (see *turnback-install*)"))
  (let* ((python (car (turnback-install--python)))
         (venv (turnback-install--venv))
         (vpython (expand-file-name "bin/python" venv))
         (fresh (not (file-executable-p vpython)))
         (source (turnback-install-source))
         (program (turnback-install-program))
         (result nil)
         (steps
          (append
           (when fresh
             (make-directory turnback-install-directory t)
             (list (cons "making a virtual environment" (list python "-m" "venv" venv))))
           (list (cons (format "installing turnback from %s"
                               (pcase (car source)
                                 ('wheel (file-name-nondirectory (cdr source)))
                                 ('checkout (abbreviate-file-name (cdr source)))
                                 (_ (format "the package registry (%s)" (cdr source)))))
                       (list vpython "-m" "pip" "install" "--disable-pip-version-check"
                             "--upgrade" (cdr source)))
                 (cons "checking the installed server" (list program "--version"))))))
    (with-current-buffer (turnback-install--buffer)
      (insert (format "\n== turnback-install-server %s: %s into %s\n"
                      (format-time-string "%F %T") (cdr source) venv)))
    (turnback-install--run
     steps
     (lambda ()
       (turnback-install--adopt program)
       (setq result 'done)
       (message "turnback: the server is installed (%s); M-x turnback-start to use it"
                (abbreviate-file-name program))
       (when callback (funcall callback program)))
     (lambda (failed)
       (when fresh  ; nothing half-installed: a new environment that failed goes
         (ignore-errors (delete-directory venv t)))
       (setq result (format "turnback: installing the server failed: %s.  %s.  Details in *turnback-install*%s"
                            failed (turnback-install--hint failed)
                            (if fresh "" "; the environment you had is unchanged")))
       (when noninteractive  ; a batch run's log is all there is to read
         (message "%s" (with-current-buffer (turnback-install--buffer) (buffer-string))))
       (message "%s" result)))
    (when wait
      (while (null result)
        (accept-process-output nil 0.1))
      (unless (eq result 'done)
        (error "%s" result)))
    program))

;;;###autoload
(defun turnback-install-offer (command)
  "Offer `turnback-install-server' when COMMAND's program is not found.
Called by `turnback-start'.  Return the installed program when the user
installed it now (the start then goes on with it), nil otherwise."
  (let ((private (turnback-install-program)))
    (cond
     ;; installed before, but the setting was not saved: use it
     ((and (file-executable-p private) (equal command '("turnback" "serve")))
      (turnback-install--adopt private)
      private)
     ((and (not noninteractive)
           (y-or-n-p (format "turnback: no server program `%s'.  Install it into %s? "
                             (car command) (abbreviate-file-name (turnback-install--venv)))))
      (turnback-install-server nil t)))))

(defun turnback-install-remove ()
  "Delete the private environment.
Reset `turnback-server-command' if it named the environment's program."
  (interactive)
  (let ((venv (turnback-install--venv)))
    (when (and (file-directory-p venv)
               (yes-or-no-p (format "Delete %s? " (abbreviate-file-name venv))))
      (delete-directory venv t)
      (when (equal (car turnback-server-command) (turnback-install-program))
        (turnback-install--adopt "turnback"))
      (message "turnback: removed %s" (abbreviate-file-name venv)))))

(provide 'turnback-install)
;;; turnback-install.el ends here
