;;; turnback.el --- Rewind and Redo for AI coding-agent sessions  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The turnback authors

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (jsonrpc "1.0.14"))
;; Keywords: tools, convenience, processes
;; URL: https://github.com/turnback/turnback

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The Emacs client of turnback, a sidecar that keeps a checkpoint
;; before every turn of an AI coding-agent session and can rewind the
;; conversation and the working tree together.
;;
;; The sidecar speaks JSON-RPC with LSP framing on stdio (`turnback
;; serve'), so the client is a `jsonrpc-process-connection' of its own,
;; `turnback-server', built on jsonrpc.el's public API alone (Emacs 28.1
;; and later carry it).  turnback is NOT a language server for the
;; buffer's language, and the client needs no eglot: `turnback-start'
;; makes a dedicated connection for the project root and forwards the
;; saves of that project's file buffers as `textDocument/didSave' from
;; `after-save-hook'.  Your usual language server (eglot, lsp-mode, or
;; none) keeps working untouched beside it.  The client never waits
;; for an answer from a timer, a process filter or a notification
;; handler: the views refresh themselves asynchronously.
;;
;; Usage: M-x turnback-start in a project, then
;;   M-x turnback-rewind-to-prompt
;;   M-x turnback-rewind-at-response
;;   M-x turnback-rewind-before-directive
;;   M-x turnback-redo
;;   M-x turnback-session          the session view (turns, files, gaps;
;;                                 rewind, fork and redo at the turn at point)
;;   M-x turnback-directive-panel  the directive at point: request,
;;                                 attempts, answers and actions
;;   M-x turnback-recovery         what a failed rollback could not put back
;; Each rewind shows the candidate in *turnback-confirm*: y commits, k
;; commits but keeps your own edits, q cancels.  The mode line shows
;; " TB" (" TB⚠N" with N capture gaps, "↺N" with N recovery records,
;; " TB:stopped" when the sidecar is gone), and directives are shown
;; at their anchor lines.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'jsonrpc)
(require 'project)
(require 'url-util)
(require 'url-parse)
(declare-function turnback-install-offer "turnback-install" (command))

;;;; Customisation

(defgroup turnback nil
  "Rewind and Redo for AI coding-agent sessions, through the turnback sidecar."
  :group 'tools
  :prefix "turnback-")

(defcustom turnback-server-command '("turnback" "serve")
  "Command that starts the turnback sidecar on stdio.
A list: the program, then its arguments.  For a virtual environment,
use for example (\"/path/to/.venv/bin/turnback\" \"serve\") or
\(\"python3\" \"-m\" \"turnback\" \"serve\")."
  :type '(repeat string))

(defcustom turnback-store-kind nil
  "Kind of store (`initializationOptions.store.kind').
nil leaves the choice to the server (heads)."
  :type '(choice (const :tag "Server default (heads)" nil)
                 (const :tag "Published heads, lease ownership, Redo" "heads")
                 (const :tag "One sidecar record, PID lock, no Redo" "pid")))

(defcustom turnback-store-path nil
  "Directory of the store (`initializationOptions.store.path').
nil means the server's default, <workspace>/.turnback."
  :type '(choice (const :tag "Server default" nil) directory))

(defcustom turnback-capture-max-file-bytes nil
  "Largest file captured, in bytes (`capture.maxFileBytes').
Larger files become `too-large' gaps.  nil means the server's default."
  :type '(choice (const :tag "Server default" nil) integer))

(defcustom turnback-capture-sweep nil
  "Whether the server sweeps the workspace before each turn (`capture.sweep').
nil means the server's default (on)."
  :type '(choice (const :tag "Server default" nil)
                 (const :tag "Sweep" t)
                 (const :tag "Do not sweep" :json-false)))

(defcustom turnback-collect-grace-heads nil
  "Number of recent heads collection never retires (`collect.graceHeads').
nil means the server's default."
  :type '(choice (const :tag "Server default" nil) integer))

(defcustom turnback-initialization-options nil
  "Extra `initializationOptions', a plist merged over the options above.
For example (:capture (:maxFileBytes 1048576)).  Nested plists are
merged key by key."
  :type 'plist)

(defcustom turnback-forward-saves t
  "Whether saving a buffer of the project sends `textDocument/didSave'."
  :type 'boolean)

(defcustom turnback-watch-files t
  "Whether to honour the server's request to watch the workspace's files.
The watches are `file-notify' watches of the project's directories,
reported as `workspace/didChangeWatchedFiles'.  When nil, the registration is
acknowledged but no watch is made; the server's sweeps still capture
files changed outside Emacs."
  :type 'boolean)

(defcustom turnback-inhibit-lockfiles t
  "Whether to turn `create-lockfiles' off in the workspace's file buffers.
Emacs's lock files (.#NAME) are dangling symbolic links; a sweep that
finds one while a buffer has unsaved changes reports it as a
`symlink' gap.  Lock files only warn about concurrent edits by other
Emacs sessions."
  :type 'boolean)

(defcustom turnback-show-directives t
  "Whether to show directives as overlays at their anchor lines."
  :type 'boolean)

(defcustom turnback-revert-changed-buffers t
  "When non-nil, revert unmodified buffers whose file changed on disk.
The file watcher sees the agent's edits (and every rewind, restore and
Redo says which files it wrote): a buffer you have not modified follows
the file, as VS Code's editors do.  A buffer with unsaved changes is
never touched."
  :type 'boolean)

(defcustom turnback-kill-deleted-file-buffers t
  "Whether a commit kills unmodified buffers visiting files it deleted."
  :type 'boolean)

(defcustom turnback-connect-timeout 30
  "Seconds to wait for the server to answer `initialize'."
  :type 'integer)

(defcustom turnback-request-timeout 120
  "Seconds to wait for the answer to a turnback request."
  :type 'integer)

(defcustom turnback-epoch-functions nil
  "Functions called with the params of each `turnback/epoch' notification.
The params are a plist (:source :sessionId :turnCount :epoch).  An
agent integration can use this to restart the agent's context."
  :type 'hook)

(defcustom turnback-recovered-functions nil
  "Functions called with the params of a `turnback/recovered' notification.
The params are a plist (:transactions :forks :message): what the server
finished or rolled back when it opened a store a crash had interrupted."
  :type 'hook)

(defface turnback-mode-line-warning
  '((t :inherit warning))
  "Face of the mode-line indicator when some files cannot be captured.")

(defface turnback-directive
  '((t :inherit font-lock-comment-face :slant italic))
  "Face of an attached directive's label.")

(defface turnback-directive-detached
  '((t :inherit shadow :strike-through t))
  "Face of a detached directive's label.")

(defface turnback-confirm-heading
  '((t :inherit bold))
  "Face of the headings of the confirmation buffer.")

(defface turnback-confirm-warning
  '((t :inherit warning))
  "Face of warnings in the confirmation buffer.")

(require 'turnback-render)

;;;; The server class and its connection

;; A plain `jsonrpc-process-connection', as eglot's own servers and
;; copilot.el are: turnback uses only jsonrpc's public API, so it works
;; with every jsonrpc from Emacs 28's 1.0.14 on, and beside any eglot or
;; lsp-mode the user runs (or none).

(defclass turnback-server (jsonrpc-process-connection)
  ((root :initarg :root :accessor turnback--root
         :documentation "Workspace root (a directory name, resolved).")
   (process :initform nil :accessor turnback--process
            :documentation "The sidecar's process (jsonrpc's own accessor is private).")
   (project :initarg :project :initform nil :accessor turnback--project
            :documentation "The project whose files are watched.")
   (capabilities :initform nil :accessor turnback--capabilities
                 :documentation "The server's capabilities, from its `initialize' answer.")
   (shutdown-requested :initform nil :accessor turnback--shutdown-requested
                       :documentation "Non-nil once the user asked the sidecar to stop.")
   (generation :initform 0 :accessor turnback--generation
               :documentation "Bumped by a stop: answers to the requests sent before are dropped.")
   (pending :initform 0 :accessor turnback--pending
            :documentation "Asynchronous requests sent and not answered yet.")
   (file-watches :initform (make-hash-table :test #'equal) :accessor turnback--file-watches
                 :documentation "Map of registration id to the file-notify descriptors it made.")
   (status :initform nil :accessor turnback--status
           :documentation "Last `turnback/status' params.")
   (directives :initform (make-hash-table :test #'equal) :accessor turnback--directives
               :documentation "Map of URI to the last list of directives for it.")
   (epoch :initform nil :accessor turnback--epoch
          :documentation "Last `turnback/epoch' params.")
   (recovered :initform nil :accessor turnback--recovered
              :documentation "The `turnback/recovered' params, if the server recovered anything."))
  :documentation "A connection to the turnback sidecar of one workspace.")

(cl-defgeneric turnback-handle-notification (server method &rest params)
  "Handle SERVER's notification METHOD (a symbol) with PARAMS (a plist).
Called from the process filter: a method never waits for an answer."
  (:method (_server _method &rest _params) nil))

(cl-defgeneric turnback-handle-request (server method &rest params)
  "Answer SERVER's request METHOD (a symbol) with PARAMS (a plist).
Called from the process filter: a method never waits for an answer.
The value is the result; an unknown method is refused."
  (:method (_server method &rest _params)
           (jsonrpc-error :code -32601 :message (format "turnback.el does not handle %s" method))))

(cl-defmethod turnback-handle-notification
  ((_server turnback-server) (_method (eql window/showMessage)) &key type message &allow-other-keys)
  "Show the server's message; errors and warnings stand out."
  (message "turnback: %s%s" (if (memq type '(1 2)) "⚠ " "") message))

(cl-defmethod turnback-handle-request
  ((_server turnback-server) (_method (eql workspace/configuration)) &key items &allow-other-keys)
  "No client-side settings: one null per item asked."
  (make-vector (length items) nil))

(defvar turnback--servers nil
  "Alist of (ROOT . SERVER) for the running sidecars.")

(defvar turnback--stopped nil
  "Alist of (ROOT . HOW) for sidecars that stopped without being asked to.")

(defun turnback--live-p (server)
  "Non-nil when SERVER's process is running."
  (and server (jsonrpc-running-p server)))

(defun turnback--server-for (file)
  "The live server whose workspace contains FILE, or nil."
  (when file
    (let ((true (file-truename file)) best)
      (pcase-dolist (`(,root . ,server) turnback--servers)
        (when (and (turnback--live-p server)
                   (file-in-directory-p true root)
                   (or (null best) (> (length root) (length (car best)))))
          (setq best (cons root server))))
      (cdr best))))

(defun turnback-current-server (&optional noerror)
  "The turnback server of the current buffer's workspace.
Signal a `user-error' when there is none, unless NOERROR."
  (turnback--reap)
  (or (turnback--server-for (or buffer-file-name default-directory))
      (and (= (length turnback--servers) 1) (turnback--live-p (cdar turnback--servers))
           (cdar turnback--servers))
      (unless noerror
        (let ((stopped (turnback--stopped-for (or buffer-file-name default-directory))))
          (if stopped
              (user-error "turnback: the sidecar for %s stopped (%s); M-x turnback-start restarts it"
                          (abbreviate-file-name (car stopped)) (cdr stopped))
            (user-error "turnback: no sidecar for this project; start one with M-x turnback-start"))))))

(defun turnback--in-store-p (server file)
  "Non-nil when FILE lies inside SERVER's store (which is never forwarded)."
  (let ((store (expand-file-name (or turnback-store-path ".turnback") (turnback--root server))))
    (file-in-directory-p file store)))

(defvar turnback--refresh-timers nil
  "Alist of (SERVER . TIMER): the coalesced refresh of the views of each server.")

(defun turnback--dispatcher (generic)
  "A jsonrpc dispatcher that spreads the params into GENERIC."
  (lambda (server method params)
    (apply generic server method (append params nil))))

(defun turnback--executable (command)
  "The executable of COMMAND, or a `user-error' explaining how to fix it."
  (let ((program (car command)))
    (or (and program (executable-find program))
        ;; issue 41: offer M-x turnback-install-server (turnback-install.el)
        (and (require 'turnback-install nil t) (turnback-install-offer command))
        (user-error "turnback: cannot find the server program `%s' (turnback-server-command is %S).  \
Install it with M-x turnback-install-server (or pip install turnback) \
or set `turnback-server-command', e.g. to (\"/path/to/.venv/bin/turnback\" \"serve\")"
                    program command))))

(defun turnback--client-capabilities ()
  "The capabilities this client offers."
  (list :workspace (list :didChangeWatchedFiles (list :dynamicRegistration
                                                      (if turnback-watch-files t :json-false))
                         :workspaceFolders t)
        :textDocument (list :synchronization (list :didSave t :dynamicRegistration :json-false))
        :window (list :showMessage (make-hash-table) :workDoneProgress :json-false)))

(defconst turnback--events-buffer-size 2000000
  "Characters kept in a connection's events buffer.")

(defun turnback--events-initargs ()
  "The initargs that bound the events buffer, in the installed jsonrpc's words.
jsonrpc 1.0.17 replaced `:events-buffer-scrollback-size' (and warns about it)."
  (if (slot-exists-p 'jsonrpc-connection '-events-buffer-config)
      (list :events-buffer-config (list :size turnback--events-buffer-size :format 'full))
    (list :events-buffer-scrollback-size turnback--events-buffer-size)))

;;;###autoload
(defun turnback-start (&optional root)
  "Start the turnback sidecar for ROOT, the current project's root by default.
With a prefix argument, ask for the directory.  Return the server."
  (interactive
   (list (when current-prefix-arg (read-directory-name "turnback workspace: "))))
  (let* ((root (file-name-as-directory
                (file-truename
                 (or root
                     (when-let ((project (project-current nil))) (project-root project))
                     default-directory))))
         (existing (cdr (assoc root turnback--servers))))
    (if (turnback--live-p existing)
        (progn (message "turnback: already running for %s" (abbreviate-file-name root))
               existing)
      (turnback--connect root))))

(defun turnback--stderr-tail (server)
  "The last line SERVER's sidecar wrote to its standard error, or nil.
Waits a moment for the stderr pipe to deliver what is still in it."
  (let* ((buffer (jsonrpc-stderr-buffer server))
         (pipe (and (buffer-live-p buffer) (get-buffer-process buffer))))
    (with-timeout (1)
      (while (and pipe (process-live-p pipe)) (accept-process-output pipe 0.05)))
    (when (buffer-live-p buffer)
      (with-current-buffer buffer
        ;; Emacs's own "Process ... finished" line and jsonrpc's marks are not the sidecar's words.
        (car (last (cl-remove-if (lambda (line) (string-match-p "\\`Process .* \\(finished\\|exited\\)" line))
                                 (split-string (buffer-string) "\n" t "[ \t]+"))))))))

(defun turnback--exit-words (process)
  "How PROCESS ended, in words."
  (pcase (process-status process)
    ('signal (format "killed by signal %s" (process-exit-status process)))
    ('exit (format "exit status %s" (process-exit-status process)))
    (status (format "%s %s" status (process-exit-status process)))))

(defun turnback--connect (root)
  "Start the sidecar in ROOT, initialize it and return the server.
When anything fails, the process started is killed and the
`user-error' says why (with the sidecar's last word on stderr)."
  (let* ((command turnback-server-command)
         (program (turnback--executable command))
         (nickname (file-name-nondirectory (directory-file-name root)))
         (name (format "turnback (%s)" nickname))
         (default-directory root)
         (process nil)
         (server nil))
    (condition-case err
        (progn
          (setq server
                (apply #'make-instance
                       'turnback-server
                       :name name
                       :root root
                       :project (or (project-current nil root) (cons 'transient root))
                       :notification-dispatcher (turnback--dispatcher #'turnback-handle-notification)
                       :request-dispatcher (turnback--dispatcher #'turnback-handle-request)
                       :on-shutdown #'turnback--on-shutdown
                       :process (lambda ()
                                  (setq process
                                        (make-process
                                         :name name
                                         :command (cons program (cdr command))
                                         :connection-type 'pipe
                                         :coding 'utf-8-emacs-unix
                                         :noquery t
                                         :stderr (get-buffer-create (format "*%s stderr*" name))
                                         :file-handler t)))
                       (turnback--events-initargs)))
          (setf (turnback--process server) process)
          (pcase (turnback--wait-for
                  server :initialize
                  (list :processId (emacs-pid)
                        :clientInfo (list :name "turnback.el" :version "0.1.0")
                        :rootPath root
                        :rootUri (turnback--path-to-uri root)
                        :workspaceFolders (vector (list :uri (turnback--path-to-uri root)
                                                        :name nickname))
                        :initializationOptions (or (turnback--initialization-options)
                                                   (make-hash-table))
                        :capabilities (turnback--client-capabilities))
                  turnback-connect-timeout)
            (`(ok ,result)
             (setf (turnback--capabilities server) (plist-get result :capabilities))
             (jsonrpc-notify server :initialized (make-hash-table)))
            (`(timeout)
             (error "it did not answer initialize in %s seconds (turnback-connect-timeout)"
                    turnback-connect-timeout))
            (`(error ,error) (error "%s" (turnback--error-words error)))
            (_ (error "it exited before it answered initialize (%s)"
                      (turnback--exit-words process)))))
      ((error quit)
       (when server (setf (turnback--shutdown-requested server) t))
       (when (process-live-p process) (delete-process process))
       (when server (ignore-errors (jsonrpc-shutdown server)))
       (let ((said (and server (turnback--stderr-tail server))))
         (user-error "turnback: the server did not start: %s%s; its messages are in the buffer %s"
                     (if (eq (car err) 'quit) "interrupted" (error-message-string err))
                     (if said (format "; it said: %s" said) "")
                     (if server (buffer-name (jsonrpc-events-buffer server)) (format "*%s stderr*" name))))))
    (push (cons root server) turnback--servers)
    (setq turnback--stopped (cl-remove root turnback--stopped :key #'car :test #'equal))
    (add-hook 'after-save-hook #'turnback--after-save)
    (add-hook 'find-file-hook #'turnback--find-file)
    (turnback--install-mode-line)
    (dolist (buffer (buffer-list))
      (with-current-buffer buffer
        (when (and buffer-file-name (eq (turnback--server-for buffer-file-name) server))
          (turnback--did-open server))))
    (let ((info (ignore-errors (turnback--request server :turnback/session/info))))
      (unless (turnback--status server)
        (setf (turnback--status server)
              (list :liveGaps (or (plist-get info :liveGaps) 0) :gaps []
                    :ownership (plist-get info :ownership) :recovery (or (plist-get info :recovery) 0))))
      (ignore-errors (turnback-refresh-directives server))
      (force-mode-line-update t)
      (message "turnback: connected to %s (%s, %s, %s)%s" (abbreviate-file-name root)
               (or (plist-get info :storeKind) "?")
               (turnback--plural (or (plist-get info :turnCount) 0) "turn")
               (or (plist-get info :ownership) "?")
               (turnback--running-note server)))
    server))

(defun turnback--running-note (server)
  "A sentence about the turn still running on SERVER, or the empty string."
  (let* ((turns (turnback--list (plist-get (ignore-errors (turnback--request server :turnback/session/log))
                                           :turns)))
         (running (cl-find "running" turns :key (lambda (x) (plist-get x :state)) :test #'equal)))
    (if running
        (format "; turn %s is still running (“%s”): M-x turnback-turn-settle ends it"
                (plist-get running :turn) (turnback--one-line (plist-get running :prompt) 40))
      "")))

(defun turnback--reap ()
  "Notice every sidecar whose process ended but whose sentinel has not run yet.
Emacs may run a process sentinel late (while file watches deliver
events, say); the mode line and every command must not wait for it."
  (pcase-dolist (`(,_root . ,server) turnback--servers)
    (when (and server (not (turnback--live-p server))) (turnback--on-shutdown server))))

(defun turnback--on-shutdown (server)
  "Clean up after SERVER's process ended.
Once, from the sentinel or from `turnback--reap'."
  (let ((process (turnback--process server)))
    (when (and process (not (process-get process 'turnback-cleaned-up)))
      (process-put process 'turnback-cleaned-up t)
      (turnback--clean-up server))))

(defun turnback--clean-up (server)
  "Forget SERVER, its watches and overlays; say how it stopped unless asked to.
A server that never finished starting says nothing here: its start says why."
  (let ((registered (rassq server turnback--servers)))
    (setq turnback--servers (cl-remove server turnback--servers :key #'cdr))
    (unless registered (setf (turnback--shutdown-requested server) t)))
  (cl-incf (turnback--generation server))
  (turnback--unwatch-all server)
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and buffer-file-name (file-in-directory-p buffer-file-name (turnback--root server)))
        (turnback--clear-overlays))))
  (unless (turnback--shutdown-requested server)
    (let* ((how (turnback--exit-words (turnback--process server)))
           (events (jsonrpc-events-buffer server)))
      (push (cons (turnback--root server) how) turnback--stopped)
      ;; The events buffer holds the exchange and the sidecar's stderr: say so in it too, so the
      ;; buffer the message names is never empty.
      (turnback--log server (format "the sidecar stopped: %s" how))
      (message "turnback: the sidecar for %s stopped (%s); its messages and errors are in the buffer %s.  \
M-x turnback-start restarts it"
               (abbreviate-file-name (turnback--root server)) how (buffer-name events))))
  (force-mode-line-update t))

(defun turnback-stop (server)
  "Politely stop the turnback SERVER (the current project's).
Pending refreshes are cancelled: their answers are dropped."
  (interactive (list (turnback-current-server)))
  (setf (turnback--shutdown-requested server) t)
  (cl-incf (turnback--generation server))
  (cl-loop for cell in turnback--refresh-timers
           when (eq (car cell) server) do (cancel-timer (cdr cell)))
  (setq turnback--refresh-timers (cl-remove server turnback--refresh-timers :key #'car))
  (unwind-protect
      (let ((turnback-request-timeout 3))
        (ignore-errors (turnback--request server :shutdown nil))
        (ignore-errors (jsonrpc-notify server :exit nil))
        (with-timeout (3) (while (jsonrpc-running-p server) (accept-process-output nil 0.05))))
    (when (jsonrpc-running-p server) (jsonrpc-shutdown server t))
    (setq turnback--servers (cl-remove server turnback--servers :key #'cdr))))

;;;; Buffers: open, save, close

(defun turnback--after-save ()
  "Forward this buffer's save to its turnback server as `textDocument/didSave'."
  (when (and turnback-forward-saves buffer-file-name)
    (when-let ((server (turnback--server-for buffer-file-name)))
      (unless (turnback--in-store-p server (file-truename buffer-file-name))
        (let ((save (turnback--get (turnback--capabilities server) :textDocumentSync :save)))
          (jsonrpc-notify
           server :textDocument/didSave
           (append (list :textDocument (list :uri (turnback--path-to-uri buffer-file-name)))
                   (when (or (null save) (turnback--true-p (plist-get save :includeText)))
                     (list :text (save-restriction
                                   (widen)
                                   (buffer-substring-no-properties (point-min) (point-max))))))))))))

(defun turnback--did-open (server)
  "Tell SERVER that the current buffer's file is open (it captures its image).
A buffer visiting a file that does not exist yet has no image to
capture: its first save announces it."
  (when turnback-inhibit-lockfiles (setq-local create-lockfiles nil))
  (when (and (file-exists-p buffer-file-name)
             (not (turnback--in-store-p server (file-truename buffer-file-name))))
    (jsonrpc-notify server :textDocument/didOpen
                    (list :textDocument
                          (list :uri (turnback--path-to-uri buffer-file-name)
                                :languageId (string-remove-suffix "-mode" (symbol-name major-mode))
                                :version 0
                                :text (save-restriction
                                        (widen)
                                        (buffer-substring-no-properties (point-min) (point-max))))))
    (add-hook 'kill-buffer-hook #'turnback--did-close nil t)))

(defun turnback--did-close ()
  "Tell the server that the current buffer's file is closed."
  (when-let ((server (and buffer-file-name (turnback--server-for buffer-file-name))))
    (ignore-errors
      (jsonrpc-notify server :textDocument/didClose
                      (list :textDocument (list :uri (turnback--path-to-uri buffer-file-name)))))))

(defun turnback--find-file ()
  "Announce a newly visited file and show its known directives."
  (when-let ((server (and buffer-file-name (turnback--server-for buffer-file-name))))
    (turnback--did-open server)
    (let ((ds (gethash (turnback--path-to-uri buffer-file-name) (turnback--directives server))))
      (when ds (turnback--apply-directives (current-buffer) ds)))))

;;;; Notifications

(cl-defmethod turnback-handle-notification
  ((server turnback-server) (_method (eql turnback/status)) &rest params)
  "Remember the status and refresh the mode line (and the session views)."
  (setf (turnback--status server) params)
  (turnback--after-change server)
  (force-mode-line-update t))

(cl-defmethod turnback-handle-notification
  ((server turnback-server) (_method (eql turnback/rewound)) &rest params)
  "A rewind, restore, Redo or fork was committed (by any client): follow it.
The buffers of the files it wrote are reverted (unless modified), and
every view and the directive overlays are refreshed."
  (dolist (uri (turnback--list (plist-get params :files)))
    (turnback--revert-soon (turnback--uri-to-path uri)))
  (turnback--refresh-directives-async server)
  (turnback--after-change server)
  (force-mode-line-update t))

(defvar turnback--revert-queue nil
  "Files whose unmodified buffers are to be reverted, soon and once.")

(defun turnback--revert-soon (file)
  "Revert the buffer visiting FILE soon, unless it is modified (see
`turnback-revert-changed-buffers'); a deleted file's buffer is left."
  (when turnback-revert-changed-buffers
    (unless turnback--revert-queue
      (run-at-time 0.2 nil #'turnback--revert-queued))
    (cl-pushnew file turnback--revert-queue :test #'equal)))

(defun turnback--revert-queued ()
  "Revert the buffers of the queued files that are unmodified and out of date."
  (let ((files turnback--revert-queue))
    (setq turnback--revert-queue nil)
    (dolist (file files)
      (let ((buffer (find-buffer-visiting file)))
        (when (and buffer (not (buffer-modified-p buffer)) (file-exists-p file)
                   (not (verify-visited-file-modtime buffer)))
          (with-current-buffer buffer (revert-buffer t t t)))))))

(cl-defmethod turnback-handle-notification
  ((server turnback-server) (_method (eql turnback/epoch)) &rest params)
  "A rewind or redo was committed: tell the user and refresh."
  (setf (turnback--epoch server) params)
  (message "turnback: %s committed (epoch %s, %s); the agent's context should restart"
           (or (plist-get params :source) "rewind") (plist-get params :epoch)
           (turnback--plural (or (plist-get params :turnCount) 0) "turn"))
  (run-hook-with-args 'turnback-epoch-functions params)
  (turnback--refresh-directives-async server)
  (turnback--after-change server)
  (force-mode-line-update t))

(cl-defmethod turnback-handle-notification
  ((server turnback-server) (_method (eql turnback/recovered)) &rest params)
  "The server finished or rolled back what a crash interrupted: say what."
  (setf (turnback--recovered server) params)
  (turnback--say-recovered params)
  (run-hook-with-args 'turnback-recovered-functions params))

(defun turnback--say-recovered (params)
  "Show the sentence of a `turnback/recovered' PARAMS plist in the echo area."
  (message "turnback: %s" (or (plist-get params :message) "recovered an interrupted transaction")))

(cl-defmethod turnback-handle-notification
  ((server turnback-server) (_method (eql turnback/directives)) &key uri directives
   &allow-other-keys)
  "Redraw the directive overlays of URI."
  (puthash uri directives (turnback--directives server))
  (when-let ((buffer (find-buffer-visiting (turnback--uri-to-path uri))))
    (turnback--apply-directives buffer directives))
  (turnback--refresh-panels server directives))

;;;; Mode line

(defun turnback-mode-line ()
  "The mode-line indicator of the current buffer's turnback server, or nil.
A sidecar that stopped shows as \" TB:stopped\"."
  (let ((server (and turnback--servers (turnback-current-server t))))
    (if server
        (turnback-mode-line-string (turnback--status server) (turnback--root server))
      (when-let ((stopped (turnback--stopped-for (or buffer-file-name default-directory))))
        (turnback-stopped-mode-line-string (cdr stopped))))))

(defun turnback--stopped-for (file)
  "The (ROOT . HOW) of a stopped sidecar whose workspace holds FILE, or nil."
  (when file
    (let ((true (file-truename file)))
      (cl-find-if (lambda (cell) (file-in-directory-p true (car cell))) turnback--stopped))))

(defconst turnback--mode-line-construct '(:eval (turnback-mode-line))
  "The construct added to `global-mode-string'.")

(defun turnback--install-mode-line ()
  "Add the indicator to `global-mode-string' once."
  (unless (listp global-mode-string) (setq global-mode-string (list global-mode-string)))
  (unless (member turnback--mode-line-construct global-mode-string)
    (setq global-mode-string (append global-mode-string (list turnback--mode-line-construct)))))

(defun turnback-show-gaps (&optional _event)
  "List the files the current sidecar cannot capture."
  (interactive)
  (let* ((server (turnback-current-server))
         (status (turnback--status server))
         (gaps (turnback--list (plist-get status :gaps))))
    (with-current-buffer (get-buffer-create "*turnback-gaps*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (turnback--heading (format "turnback: %s cannot be captured"
                                           (turnback--plural (or (plist-get status :liveGaps) 0) "file"))))
        (dolist (g gaps) (insert "  " (turnback-format-gap g (turnback--root server)) "\n"))
        (special-mode))
      (display-buffer (current-buffer)))))

;;;; Choosing

(defun turnback--completion-table (alist)
  "A completion table over the labels of ALIST that keeps their order."
  (lambda (string pred action)
    (if (eq action 'metadata)
        '(metadata (category . turnback) (display-sort-function . identity)
                   (cycle-sort-function . identity))
      (complete-with-action action (mapcar #'car alist) string pred))))

(defun turnback--choose (prompt alist)
  "Read one of ALIST's labels with PROMPT and return its value."
  (unless alist (user-error "turnback: nothing to choose from"))
  (let ((label (completing-read (format-prompt (string-trim-right prompt "[: ]+") (caar alist))
                                (turnback--completion-table alist) nil t nil nil
                                (caar alist))))
    (or (cdr (assoc label alist))
        (user-error "turnback: no such choice: %s" label))))

;;;; Driving turns by hand (agent integrations use the requests directly)

(defun turnback-request (method &optional params server)
  "Send the contract's METHOD (a keyword) with PARAMS to SERVER; return the result.
SERVER defaults to the current project's.  For agent integrations."
  (turnback--request (or server (turnback-current-server)) method params))

(defun turnback-turn-begin (prompt &optional directive-id)
  "Begin a turn with PROMPT; its pre-turn checkpoint is fixed on return.
With DIRECTIVE-ID (interactively: a prefix argument, or point on a
directive's anchor line when asked), begin a directive turn: an
attempt at that directive, its request being the prompt by default."
  (interactive
   (let ((d (when current-prefix-arg
              (or (turnback-directive-at-point)
                  (turnback--choose "Directive: "
                                    (turnback-directive-choices
                                     (turnback--list (plist-get (turnback-request :turnback/directive/list)
                                                                :directives))))))))
     (list (read-string (format-prompt "Prompt" (and d (turnback-directive-name (plist-get d :request))))
                        nil nil (and d (plist-get d :request)))
           (plist-get d :id))))
  (let ((turn (plist-get (turnback-request :turnback/turn/begin
                                           (append (list :kind (if directive-id "directive" "chat")
                                                         :prompt prompt)
                                                   (when directive-id (list :directiveId directive-id))))
                         :turn)))
    (message "turnback: %s turn %s begun; edit and save, then M-x turnback-turn-settle"
             (if directive-id (format "directive (%s)" directive-id) "chat") turn)
    turn))

(defun turnback-turn-settle (&optional cancelled)
  "Settle the running turn (with a prefix argument: as cancelled)."
  (interactive "P")
  (let* ((turns (turnback--list (plist-get (turnback-request :turnback/session/log) :turns)))
         (running (cl-find "running" turns :key (lambda (x) (plist-get x :state)) :test #'equal)))
    (unless running (user-error "turnback: no turn is running"))
    (prog1 (turnback-request :turnback/turn/settle
                             (list :turn (plist-get running :turn)
                                   :status (if cancelled "cancelled" "settled")))
      (message "turnback: turn %s %s" (plist-get running :turn) (if cancelled "cancelled" "settled")))))

;;;; Key bindings

;;;###autoload (autoload 'turnback-command-map "turnback" nil t 'keymap)
(defvar turnback-command-map
  (let ((map (make-sparse-keymap)))
    (define-key map "s" #'turnback-start)
    (define-key map "k" #'turnback-stop)
    (define-key map "p" #'turnback-rewind-to-prompt)
    (define-key map "r" #'turnback-rewind-at-response)
    (define-key map "d" #'turnback-rewind-before-directive)
    (define-key map "R" #'turnback-redo)
    (define-key map "a" #'turnback-directive-add)
    (define-key map "g" #'turnback-show-gaps)
    (define-key map "v" #'turnback-recovery)
    (define-key map "b" #'turnback-turn-begin)
    (define-key map "e" #'turnback-turn-settle)
    (define-key map "l" #'turnback-session)
    (define-key map "D" #'turnback-directive-panel)
    (define-key map "f" #'turnback-fork-at-response)
    (define-key map "o" #'turnback-restore-file)
    (define-key map "=" #'turnback-diff-turn)
    (define-key map "L" #'turnback-lineage)
    map)
  "The turnback commands, to bind to a prefix key of your choice.
For example: (global-set-key (kbd \"C-c t\") \\='turnback-command-map).")
(fset 'turnback-command-map turnback-command-map)

(provide 'turnback)

;; The rest of the package, by concern (each requires this file, which is provided by now).
(require 'turnback-confirm)
(require 'turnback-views)
(require 'turnback-diff)
(require 'turnback-directives)
(require 'turnback-watch)
(require 'turnback-rpc)

;;; turnback.el ends here
