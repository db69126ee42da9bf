;;; turnback.el --- Rewind and Redo for AI coding-agent sessions  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The turnback authors

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9") (jsonrpc "1.0.14"))
;; Keywords: tools, convenience, processes
;; URL: https://github.com/turnback/turnback

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The Emacs client of turnback, a sidecar that keeps a checkpoint
;; before every turn of an AI coding-agent session and can rewind the
;; conversation and the working tree together.
;;
;; The sidecar speaks JSON-RPC with LSP framing on stdio (`turnback
;; serve'), so the client is an eglot server class, `turnback-server',
;; a subclass of `eglot-lsp-server'.  turnback is NOT a language server
;; for the buffer's language, though, and eglot manages at most one
;; server per major mode per project.  So `turnback-start' does not go
;; through `eglot-server-programs' or `eglot--managed-mode': it makes a
;; dedicated connection of class `turnback-server' for the project root
;; and forwards the saves of that project's file buffers as
;; `textDocument/didSave' from `after-save-hook'.  Your usual language
;; server (eglot, lsp-mode, or none) keeps working untouched.
;;
;; Usage: M-x turnback-start in a project, then
;;   M-x turnback-rewind-to-prompt
;;   M-x turnback-rewind-at-response
;;   M-x turnback-rewind-before-directive
;;   M-x turnback-redo
;; Each shows the candidate in *turnback-confirm*: y commits, q cancels.
;; The mode line shows " TB" (or " TB⚠N" when N files cannot be
;; captured), and directives are shown at their anchor lines.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'jsonrpc)
(require 'eglot)
(require 'project)
(require 'url-util)
(require 'url-parse)

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
The watches use eglot's implementation of
`workspace/didChangeWatchedFiles'.  When nil, the registration is
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

;;;; Small helpers (pure)

(defun turnback--get (obj &rest keys)
  "Follow KEYS down the plist OBJ."
  (dolist (k keys obj)
    (setq obj (plist-get obj k))))

(defun turnback--true-p (value)
  "Non-nil when the JSON VALUE is true."
  (and value (not (eq value :json-false))))

(defun turnback--list (seq)
  "SEQ (a JSON array, vector or list) as a list."
  (append seq nil))

(defun turnback--uri-to-path (uri)
  "The local file name of the file URI."
  (url-unhex-string (url-filename (url-generic-parse-url uri))))

(defconst turnback--uri-allowed-chars
  (let ((vec (copy-sequence url-path-allowed-chars)))
    (aset vec ?: nil)
    vec)
  "Characters left as they are in the path of a file URI.")

(defun turnback--path-to-uri (path)
  "The file URI of PATH, resolving symbolic links like the server does."
  (concat "file://"
          (url-hexify-string (directory-file-name (file-truename path))
                             turnback--uri-allowed-chars)))

(defun turnback--display-path (uri &optional root)
  "A short name for URI: relative to ROOT when inside it."
  (cond ((null uri) "(no file)")
        ((not (stringp uri)) (format "%s" uri))
        (t (let ((path (if (string-prefix-p "file:" uri) (turnback--uri-to-path uri) uri)))
             (if (and root (string-prefix-p (file-name-as-directory root) path))
                 (substring path (length (file-name-as-directory root)))
               path)))))

(defun turnback--one-line (text &optional width)
  "TEXT on one line, cut to WIDTH (default 60) characters."
  (let ((s (string-trim (replace-regexp-in-string "[ \t\n\r]+" " " (or text "")))))
    (truncate-string-to-width s (or width 60) nil nil "…")))

(defun turnback--plural (n word)
  "N WORD, with an s when N is not 1."
  (format "%d %s%s" n word (if (eql n 1) "" "s")))

(defun turnback--merge-plists (base over)
  "Merge plist OVER into plist BASE, recursively for nested plists."
  (let ((out (copy-sequence base)))
    (cl-loop for (k v) on over by #'cddr
             do (let ((old (plist-get out k)))
                  (setq out (plist-put out k
                                       (if (and (consp old) (keywordp (car old))
                                                (consp v) (keywordp (car v)))
                                           (turnback--merge-plists old v)
                                         v)))))
    out))

(defun turnback--initialization-options ()
  "The `initializationOptions' plist built from the customisation."
  (let (store capture collect opts)
    (when turnback-store-kind (setq store (plist-put store :kind turnback-store-kind)))
    (when turnback-store-path
      (setq store (plist-put store :path (expand-file-name turnback-store-path))))
    (when turnback-capture-max-file-bytes
      (setq capture (plist-put capture :maxFileBytes turnback-capture-max-file-bytes)))
    (when turnback-capture-sweep
      (setq capture (plist-put capture :sweep turnback-capture-sweep)))
    (when turnback-collect-grace-heads
      (setq collect (plist-put collect :graceHeads turnback-collect-grace-heads)))
    (when store (setq opts (plist-put opts :store store)))
    (when capture (setq opts (plist-put opts :capture capture)))
    (when collect (setq opts (plist-put opts :collect collect)))
    (turnback--merge-plists opts turnback-initialization-options)))

;;;; Rendering (pure: data in, string out)

(defun turnback-format-gap (gap &optional root)
  "One line describing GAP (plist :uri :turn :reason :detail), relative to ROOT."
  (let ((detail (plist-get gap :detail))
        (turn (plist-get gap :turn)))
    (concat (turnback--display-path (plist-get gap :uri) root)
            ": " (or (plist-get gap :reason) "unknown")
            (if (and detail (not (string-empty-p detail))) (concat " — " detail) "")
            (if turn (format " (turn %s)" turn) ""))))

(defun turnback-mode-line-string (status &optional root)
  "The mode-line indicator for STATUS, a `turnback/status' plist.
\" TB\" normally, \" TB⚠N\" when N files cannot be captured.  The
help-echo lists the gaps (file names relative to ROOT)."
  (let* ((n (or (plist-get status :liveGaps) 0))
         (gaps (turnback--list (plist-get status :gaps)))
         (observer (equal (plist-get status :ownership) "observer"))
         (recovery (or (plist-get status :recovery) 0))
         (text (concat " TB" (if (> n 0) (format "⚠%d" n) "")
                       (if observer ":observer" "")))
         (help (concat
                (if (> n 0)
                    (concat (format "turnback: %s cannot be captured (a rewind cannot put %s back):"
                                    (turnback--plural n "file") (if (= n 1) "it" "them"))
                            (mapconcat (lambda (g) (concat "\n  " (turnback-format-gap g root)))
                                       gaps ""))
                  "turnback: every file is captured")
                (if observer "\nAnother process owns the store: this session is read-only." "")
                (if (> recovery 0)
                    (format "\n%s to resolve (M-x turnback-recovery)"
                            (turnback--plural recovery "recovery record"))
                  "")
                (if (turnback--true-p (plist-get status :collecting)) "\nCollecting old heads…" "")
                "\nmouse-1: list the gaps")))
    (propertize text
                'face (when (or (> n 0) (> recovery 0)) 'turnback-mode-line-warning)
                'help-echo help
                'mouse-face 'mode-line-highlight
                'local-map (let ((map (make-sparse-keymap)))
                             (define-key map [mode-line mouse-1] #'turnback-show-gaps)
                             map))))

(defun turnback-directive-detached-p (directive)
  "Non-nil when DIRECTIVE lost its anchor."
  (or (equal (plist-get directive :state) "detached")
      (eq (turnback--get directive :anchor :attached) :json-false)))

(defun turnback-directive-label (directive)
  "The text shown after DIRECTIVE's anchor line, e.g. ⟦directive: answered⟧."
  (if (turnback-directive-detached-p directive)
      (format "⟦directive detached: %s⟧" (turnback--one-line (plist-get directive :request) 40))
    (format "⟦directive: %s⟧" (plist-get directive :state))))

(defun turnback-directive-help (directive)
  "A longer description of DIRECTIVE for help-echo."
  (let ((attempts (turnback--list (plist-get directive :attempts))))
    (concat (format "Directive %s (%s)%s\n%s"
                    (plist-get directive :id) (plist-get directive :state)
                    (if (turnback-directive-detached-p directive)
                        " — its anchor line changed or disappeared" "")
                    (plist-get directive :request))
            (mapconcat (lambda (a)
                         (format "\n  attempt in turn %s%s" (plist-get a :turn)
                                 (if (plist-get a :answer)
                                     (concat ": " (turnback--one-line (plist-get a :answer) 50))
                                   "")))
                       attempts ""))))

(defconst turnback--effect-labels
  '((:restored . "Put back by the rewind")
    (:droppedBeforeCrossing . "Held sends dropped before they left this machine")
    (:crossedUncompensated . "Already left this machine; nothing undoes them")
    (:crossedCompensated . "Left this machine; a logged step compensates them")
    (:wouldCrossOnRewind . "Have an inverse that could leave this machine, so it is not run")
    (:unrestored . "Not put back")
    (:provablyEmpty . "Had no effect"))
  "The seven effect lists of a candidate, in order, with their meaning.")

(defun turnback--heading (text)
  "TEXT as a heading line."
  (concat (propertize text 'face 'turnback-confirm-heading) "\n"))

(defun turnback--warn (text)
  "TEXT in the warning face."
  (propertize text 'face 'turnback-confirm-warning))

(defun turnback--render-files (files root)
  "Lines for FILES (FilePlans), relative to ROOT."
  (let ((shown (cl-remove-if (lambda (f) (equal (plist-get f :action) "unchanged")) files))
        (unchanged (cl-count-if (lambda (f) (equal (plist-get f :action) "unchanged")) files)))
    (concat
     (turnback--heading "Files")
     (if (null shown) "  (no file changes)\n"
       (mapconcat (lambda (f)
                    (let ((action (plist-get f :action)))
                      (format "  %-8s %s%s\n"
                              (cond ((equal action "restore")
                                     (if (equal (plist-get f :from) "absent") "recreate" "restore"))
                                    (t action))
                              (turnback--display-path (plist-get f :uri) root)
                              (if (turnback--true-p (plist-get f :externalChange))
                                  (turnback--warn "  (edited outside the session: will be overwritten)")
                                ""))))
                  shown ""))
     (if (> unchanged 0) (format "  (%s unchanged)\n" (turnback--plural unchanged "file")) ""))))

(defun turnback--render-external (files root)
  "The external-changes section for FILES, relative to ROOT."
  (let ((ext (cl-remove-if-not (lambda (f) (turnback--true-p (plist-get f :externalChange))) files)))
    (concat (turnback--heading "External changes that will be overwritten")
            (if (null ext) "  none\n"
              (mapconcat (lambda (f)
                           (turnback--warn
                            (format "  %s\n" (turnback--display-path (plist-get f :uri) root))))
                         ext "")))))

(defun turnback--render-gaps (gaps root)
  "The gaps section for GAPS, relative to ROOT."
  (concat (turnback--heading "Gaps: what cannot be put back")
          (if (null gaps) "  none\n"
            (mapconcat (lambda (g) (turnback--warn (concat "  " (turnback-format-gap g root) "\n")))
                       gaps ""))))

(defun turnback--fill (text)
  "TEXT filled to 72 columns, indented by two spaces."
  (with-temp-buffer
    (insert (or text ""))
    (let ((fill-column 72) (fill-prefix "  ") (sentence-end-double-space nil))
      (goto-char (point-min)) (insert "  ")
      (fill-region (point-min) (point-max)))
    (concat (string-trim-right (buffer-string)) "\n")))

(defun turnback-boundary-title (boundary)
  "A title for the rewind to BOUNDARY."
  (pcase (plist-get boundary :kind)
    ("afterResponse" (format "Rewind to just after the response of turn %s" (plist-get boundary :turn)))
    ("beforePrompt" (format "Rewind to just before the prompt of turn %s" (plist-get boundary :turn)))
    ("beforeDirectiveAttempt"
     (format "Rewind to just before the attempt of turn %s at directive %s"
             (plist-get boundary :turn) (plist-get boundary :directiveId)))
    (_ (format "Rewind to %S" boundary))))

(defun turnback-render-candidate (candidate &optional root title)
  "The confirmation text for the rewind CANDIDATE (a plist), relative to ROOT.
TITLE heads it; by default it is derived from the candidate's boundary."
  (let* ((keep (plist-get candidate :keep))
         (discard (plist-get candidate :discard))
         (files (turnback--list (plist-get candidate :files)))
         (gaps (turnback--list (plist-get candidate :gaps)))
         (effects (plist-get candidate :effects))
         (directives (turnback--list (plist-get candidate :directives)))
         (wf (plist-get candidate :workflowCleared))
         (title (or title (turnback-boundary-title (plist-get candidate :boundary)))))
    (concat
     (propertize title 'face '(:inherit turnback-confirm-heading :height 1.2)) "\n\n"
     (turnback--heading "Kept")
     (let ((n (or (plist-get keep :turnCount) 0)) (last (plist-get keep :last)))
       (if (= n 0) "  nothing: the session becomes empty\n"
         (format "  %s, ending with turn %s: “%s”\n" (turnback--plural n "turn")
                 (plist-get last :turn) (turnback--one-line (plist-get last :prompt)))))
     (turnback--heading "Discarded")
     (let ((n (or (plist-get discard :turnCount) 0)) (first (plist-get discard :first)))
       (if (= n 0) "  nothing\n"
         (format "  %s with their answers, from turn %s: “%s”\n" (turnback--plural n "turn")
                 (plist-get first :turn) (turnback--one-line (plist-get first :prompt)))))
     "\n" (turnback--render-files files root)
     "\n" (turnback--render-external files root)
     "\n" (turnback--render-gaps gaps root)
     "\n" (turnback--heading "Effects of the discarded steps")
     (mapconcat (lambda (cell)
                  (let ((ids (turnback--list (plist-get effects (car cell)))))
                    (format "  %-22s %s: %s\n" (substring (symbol-name (car cell)) 1) (cdr cell)
                            (if ids (mapconcat (lambda (x) (format "%s" x)) ids ", ") "none"))))
                turnback--effect-labels "")
     "\n" (turnback--heading "Directives")
     (if (null directives) "  no directive changes\n"
       (mapconcat (lambda (d)
                    (format "  %s%s: %s discarded, becomes %s\n"
                            (plist-get d :id)
                            (if (plist-get d :request)
                                (format " “%s”" (turnback--one-line (plist-get d :request) 40)) "")
                            (turnback--plural (or (plist-get d :attemptsDiscarded) 0) "attempt")
                            (plist-get d :stateAfter)))
                  directives ""))
     "\n" (turnback--heading "Workflow cleared")
     (if (or (null wf) (cl-every #'zerop (cl-loop for (_k v) on wf by #'cddr
                                                   when (numberp v) collect v)))
         "  nothing\n"
       (format "  %s, %s, %s, %s\n"
               (turnback--plural (or (plist-get wf :tasks) 0) "task")
               (turnback--plural (or (plist-get wf :goals) 0) "goal")
               (turnback--plural (or (plist-get wf :agents) 0) "agent")
               (turnback--plural (or (plist-get wf :handoffs) 0) "handoff")))
     "\n" (turnback--heading "Summary")
     (turnback--fill (plist-get candidate :summary))
     "\n" (propertize "y: commit this rewind    q: cancel" 'face 'bold) "\n")))

(defun turnback-render-redo-plan (plan &optional root title)
  "The confirmation text for the redo PLAN, relative to ROOT.
PLAN is the result of `turnback/redo/prepare'; TITLE heads it."
  (let ((files (turnback--list (plist-get plan :files)))
        (gaps (turnback--list (plist-get plan :gaps))))
    (concat
     (propertize (or title (format "Redo: bring back head %s" (plist-get plan :headSeq)))
                 'face '(:inherit turnback-confirm-heading :height 1.2))
     "\n\n"
     (turnback--heading "Brought back")
     (format "  %s (head %s)\n" (turnback--plural (or (plist-get plan :turnCount) 0) "turn")
             (plist-get plan :headSeq))
     (turnback--heading "Replaced")
     (format "  the session as it is now%s; it stays available in Redo\n"
             (if (plist-get plan :currentHead) (format " (head %s)" (plist-get plan :currentHead)) ""))
     "\n" (turnback--render-files files root)
     "\n" (turnback--render-external files root)
     "\n" (turnback--render-gaps gaps root)
     (if (plist-get plan :summary)
         (concat "\n" (turnback--heading "Summary") (turnback--fill (plist-get plan :summary)))
       "")
     "\n" (propertize "y: commit this redo    q: cancel" 'face 'bold) "\n")))

(defun turnback-render-recovery (records &optional root)
  "Text describing the Recovery RECORDS left by a rolled-back commit."
  (concat (turnback--heading "The commit was rolled back; these could not be put back:")
          (mapconcat (lambda (r)
                       (format "  %s (%s): %s\n    %s\n" (plist-get r :id) (plist-get r :operation)
                               (plist-get r :reason)
                               (mapconcat (lambda (u) (turnback--display-path u root))
                                          (turnback--list (plist-get r :paths)) ", ")))
                     records "")
          "Use M-x turnback-recovery to retry or dismiss them.\n"))

(defun turnback-prompt-choices (log)
  "Completion choices for prompts of LOG (`turnback/session/log'), newest first.
An alist of (LABEL . TURN)."
  (mapcar (lambda (turn)
            (cons (format "%s: %s" (plist-get turn :turn) (turnback--one-line (plist-get turn :prompt) 70))
                  (plist-get turn :turn)))
          (reverse (turnback--list (plist-get log :turns)))))

(defun turnback-response-choices (log)
  "Completion choices for responses of LOG, newest first.
An alist of (LABEL . TURN)."
  (mapcar (lambda (turn)
            (let ((resp (plist-get turn :response)))
              (cons (format "%s: %s  ← “%s”" (plist-get turn :turn)
                            (if (and resp (not (string-empty-p resp)))
                                (turnback--one-line resp 50)
                              (format "(no response, %s)" (plist-get turn :state)))
                            (turnback--one-line (plist-get turn :prompt) 30))
                    (plist-get turn :turn))))
          (reverse (turnback--list (plist-get log :turns)))))

(defun turnback-directive-choices (directives &optional root)
  "Completion choices for DIRECTIVES, an alist of (LABEL . DIRECTIVE)."
  (mapcar (lambda (d)
            (cons (format "%s:%s [%s] %s  (%s)"
                          (turnback--display-path (plist-get d :uri) root)
                          (1+ (or (turnback--get d :anchor :line) 0))
                          (plist-get d :state)
                          (turnback--one-line (plist-get d :request) 50)
                          (plist-get d :id))
                  d))
          directives))

(defun turnback-attempt-choices (directive)
  "Completion choices for the attempts of DIRECTIVE, newest first: (LABEL . TURN)."
  (mapcar (lambda (a)
            (cons (format "turn %s%s" (plist-get a :turn)
                          (if (plist-get a :answer)
                              (concat ": " (turnback--one-line (plist-get a :answer) 60)) ""))
                  (plist-get a :turn)))
          (reverse (turnback--list (plist-get directive :attempts)))))

(defun turnback-redo-choices (groups)
  "Completion choices for Redo GROUPS: (LABEL . HEADSEQ)."
  (mapcar (lambda (g)
            (cons (format "head %s: %s, last prompt “%s”%s"
                          (plist-get g :headSeq)
                          (turnback--plural (or (plist-get g :turnCount) 0) "turn")
                          (turnback--one-line (plist-get g :lastPrompt) 50)
                          (if (numberp (plist-get g :created))
                              (format-time-string "  (%Y-%m-%d %H:%M)" (plist-get g :created))
                            ""))
                  (plist-get g :headSeq)))
          groups))

;;;; The server class and its connection

(defclass turnback-server (eglot-lsp-server)
  ((root :initarg :root :accessor turnback--root
         :documentation "Workspace root (a directory name, resolved).")
   (status :initform nil :accessor turnback--status
           :documentation "Last `turnback/status' params.")
   (directives :initform (make-hash-table :test #'equal) :accessor turnback--directives
               :documentation "Map of URI to the last list of directives for it.")
   (epoch :initform nil :accessor turnback--epoch
          :documentation "Last `turnback/epoch' params."))
  :documentation "A connection to the turnback sidecar of one workspace.")

(cl-defmethod eglot-initialization-options ((_server turnback-server))
  "The store options, from the customisation."
  (or (turnback--initialization-options) (make-hash-table)))

(defvar turnback--servers nil
  "Alist of (ROOT . SERVER) for the running sidecars.")

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
  (or (turnback--server-for (or buffer-file-name default-directory))
      (and (= (length turnback--servers) 1) (turnback--live-p (cdar turnback--servers))
           (cdar turnback--servers))
      (unless noerror
        (user-error "turnback: no sidecar for this project; start one with M-x turnback-start"))))

(defun turnback--in-store-p (server file)
  "Non-nil when FILE lies inside SERVER's store (which is never forwarded)."
  (let ((store (expand-file-name (or turnback-store-path ".turnback") (turnback--root server))))
    (file-in-directory-p file store)))

(defun turnback--request (server method &optional params)
  "Send METHOD with PARAMS to SERVER and return the result.
A JSON-RPC error becomes a `user-error' naming its code."
  (condition-case err
      (jsonrpc-request server method (or params (make-hash-table))
                       :timeout turnback-request-timeout)
    (jsonrpc-error
     (let* ((data (alist-get 'jsonrpc-error-data (cdr err)))
            (code (or (plist-get data :code) (alist-get 'jsonrpc-error-code (cdr err)))))
       (user-error "turnback: %s [%s]"
                   (or (alist-get 'jsonrpc-error-message (cdr err)) "request failed") code)))))

(defun turnback--dispatcher (generic)
  "A jsonrpc dispatcher that spreads the params into GENERIC, like eglot."
  (lambda (server method params)
    (apply generic server method (append params nil))))

(defun turnback--executable (command)
  "The executable of COMMAND, or a `user-error' explaining how to fix it."
  (let ((program (car command)))
    (or (and program (executable-find program))
        (user-error "turnback: cannot find the server program `%s' (turnback-server-command is %S).  \
Install turnback (pip install turnback, or pip install -e . in its repository) \
or set `turnback-server-command', e.g. to (\"/path/to/.venv/bin/turnback\" \"serve\")"
                    program command))))

(defun turnback--client-capabilities ()
  "The capabilities this client offers."
  (list :workspace (list :didChangeWatchedFiles (list :dynamicRegistration
                                                      (if turnback-watch-files t :json-false))
                         :workspaceFolders t)
        :textDocument (list :synchronization (list :didSave t :dynamicRegistration :json-false))
        :window (list :showMessage (make-hash-table) :workDoneProgress :json-false)))

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

(defun turnback--connect (root)
  "Start the sidecar in ROOT, initialize it and return the server."
  (let* ((command turnback-server-command)
         (program (turnback--executable command))
         (nickname (file-name-nondirectory (directory-file-name root)))
         (name (format "turnback (%s)" nickname))
         (default-directory root)
         (server
          (make-instance
           'turnback-server
           :name name
           :root root
           :events-buffer-scrollback-size 2000000
           :notification-dispatcher (turnback--dispatcher #'eglot-handle-notification)
           :request-dispatcher (turnback--dispatcher #'eglot-handle-request)
           :on-shutdown #'turnback--on-shutdown
           :process (lambda ()
                      (make-process
                       :name name
                       :command (cons program (cdr command))
                       :connection-type 'pipe
                       :coding 'utf-8-emacs-unix
                       :noquery t
                       :stderr (get-buffer-create (format "*%s stderr*" name))
                       :file-handler t)))))
    (setf (eglot--project server) (or (project-current nil root) (cons 'transient root))
          (eglot--project-nickname server) nickname
          (eglot--major-modes server) nil
          (eglot--language-id server) "turnback"
          (eglot--saved-initargs server) nil
          (eglot--inhibit-autoreconnect server) t)
    (condition-case err
        (let ((result (jsonrpc-request
                       server :initialize
                       (list :processId (emacs-pid)
                             :clientInfo (list :name "turnback.el" :version "0.1.0")
                             :rootPath root
                             :rootUri (turnback--path-to-uri root)
                             :workspaceFolders (vector (list :uri (turnback--path-to-uri root)
                                                             :name nickname))
                             :initializationOptions (eglot-initialization-options server)
                             :capabilities (turnback--client-capabilities))
                       :timeout turnback-connect-timeout)))
          (setf (eglot--capabilities server) (plist-get result :capabilities)
                (eglot--server-info server) (plist-get result :serverInfo))
          (jsonrpc-notify server :initialized (make-hash-table)))
      ((error quit)
       (ignore-errors (jsonrpc-shutdown server t))
       (user-error "turnback: the server did not start (%s); see the buffer %s"
                   (error-message-string err) (format "*%s stderr*" name))))
    (push (cons root server) turnback--servers)
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
      (turnback-refresh-directives server)
      (force-mode-line-update t)
      (message "turnback: connected to %s (%s, %s, %s)" (abbreviate-file-name root)
               (or (plist-get info :storeKind) "?")
               (turnback--plural (or (plist-get info :turnCount) 0) "turn")
               (or (plist-get info :ownership) "?")))
    server))

(defun turnback--on-shutdown (server)
  "Clean up after SERVER's process ended."
  (setq turnback--servers (cl-remove server turnback--servers :key #'cdr))
  (maphash (lambda (_id watches) (mapc #'file-notify-rm-watch watches))
           (eglot--file-watches server))
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and buffer-file-name (file-in-directory-p buffer-file-name (turnback--root server)))
        (turnback--clear-overlays))))
  (force-mode-line-update t)
  (unless (eglot--shutdown-requested server)
    (message "turnback: the sidecar for %s exited; see %s"
             (abbreviate-file-name (turnback--root server)) (jsonrpc-name server))))

(defun turnback-stop (server)
  "Politely stop the turnback SERVER (the current project's)."
  (interactive (list (turnback-current-server)))
  (setf (eglot--shutdown-requested server) t)
  (unwind-protect
      (progn (ignore-errors (jsonrpc-request server :shutdown nil :timeout 3))
             (ignore-errors (jsonrpc-notify server :exit nil))
             (with-timeout (3) (while (jsonrpc-running-p server) (accept-process-output nil 0.05))))
    (when (jsonrpc-running-p server) (jsonrpc-shutdown server t))
    (setq turnback--servers (cl-remove server turnback--servers :key #'cdr))))

;;;; Requests from the server: the file watcher

(cl-defmethod eglot-handle-request
  ((server turnback-server) (method (eql client/registerCapability)) &key registrations)
  "Honour file-watch registrations only when `turnback-watch-files' is non-nil."
  (if turnback-watch-files
      (cl-call-next-method server method :registrations registrations)
    nil))

(defun turnback--watched-directories (server)
  "The directories of SERVER's project to watch: never the store or .git."
  (let ((root (turnback--root server)))
    (cl-remove-if (lambda (dir)
                    (or (turnback--in-store-p server dir)
                        (file-in-directory-p dir (expand-file-name ".git" root))))
                  (delete-dups
                   (cons root (mapcar #'file-name-directory
                                      (project-files (eglot--project server))))))))

(defun turnback--emacs-scratch-file-p (file)
  "Non-nil for Emacs's own lock, auto-save and backup files, never reported."
  (let ((name (file-name-nondirectory file)))
    (or (string-prefix-p ".#" name)
        (string-match-p "\\`#.*#\\'" name)
        (string-suffix-p "~" name))))

(cl-defmethod eglot-register-capability
  ((server turnback-server) (method (eql workspace/didChangeWatchedFiles)) id &key _watchers)
  "Watch the workspace's directories and report changes outside the store.
The server asks for every file (**/*), so the globs are not consulted."
  (eglot-unregister-capability server method id)
  (cl-labels ((handle (event)
                (pcase-let ((`(,_desc ,action ,file ,file1) event))
                  (cond
                   ((eq action 'renamed)
                    (handle (list nil 'deleted file))
                    (handle (list nil 'created file1)))
                   ((and (memq action '(created changed deleted))
                         (turnback--live-p server)
                         (not (turnback--in-store-p server file))
                         (not (turnback--emacs-scratch-file-p file))
                         (not (file-directory-p file)))
                    (jsonrpc-notify
                     server :workspace/didChangeWatchedFiles
                     (list :changes (vector (list :uri (turnback--path-to-uri file)
                                                  :type (pcase action
                                                          ('created 1) ('changed 2) (_ 3)))))))))))
    (let ((dirs (turnback--watched-directories server)))
      (dolist (dir dirs)
        (ignore-errors
          (push (file-notify-add-watch dir '(change) #'handle)
                (gethash id (eglot--file-watches server)))))
      (list t (format "watching %d directories" (length dirs))))))

;;;; Buffers: open, save, close

(defun turnback--after-save ()
  "Forward this buffer's save to its turnback server as `textDocument/didSave'."
  (when (and turnback-forward-saves buffer-file-name)
    (when-let ((server (turnback--server-for buffer-file-name)))
      (unless (turnback--in-store-p server (file-truename buffer-file-name))
        (let ((save (turnback--get (eglot--capabilities server) :textDocumentSync :save)))
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

(cl-defmethod eglot-handle-notification
  ((server turnback-server) (_method (eql turnback/status)) &rest params)
  "Remember the status and refresh the mode line."
  (setf (turnback--status server) params)
  (force-mode-line-update t))

(cl-defmethod eglot-handle-notification
  ((server turnback-server) (_method (eql turnback/epoch)) &rest params)
  "A rewind or redo was committed: tell the user and refresh."
  (setf (turnback--epoch server) params)
  (message "turnback: %s committed (epoch %s, %s); the agent's context should restart"
           (or (plist-get params :source) "rewind") (plist-get params :epoch)
           (turnback--plural (or (plist-get params :turnCount) 0) "turn"))
  (run-hook-with-args 'turnback-epoch-functions params)
  (run-at-time 0 nil (lambda ()
                       (when (turnback--live-p server)
                         (ignore-errors (turnback-refresh-directives server))
                         (force-mode-line-update t)))))

(cl-defmethod eglot-handle-notification
  ((server turnback-server) (_method (eql turnback/directives)) &key uri directives
   &allow-other-keys)
  "Redraw the directive overlays of URI."
  (puthash uri directives (turnback--directives server))
  (when-let ((buffer (find-buffer-visiting (turnback--uri-to-path uri))))
    (turnback--apply-directives buffer directives)))

;;;; Mode line

(defun turnback-mode-line ()
  "The mode-line indicator of the current buffer's turnback server, or nil."
  (when-let ((server (and turnback--servers (turnback-current-server t))))
    (turnback-mode-line-string (turnback--status server) (turnback--root server))))

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

;;;; Directive overlays

(defun turnback--clear-overlays ()
  "Delete this buffer's directive overlays."
  (save-restriction
    (widen)
    (remove-overlays (point-min) (point-max) 'turnback-directive-overlay t)))

(defun turnback--apply-directives (buffer directives)
  "Show DIRECTIVES in BUFFER as overlays at their anchor lines."
  (with-current-buffer buffer
    (turnback--clear-overlays)
    (when turnback-show-directives
      (save-excursion
        (save-restriction
          (widen)
          (dolist (d (turnback--list directives))
            (goto-char (point-min))
            (forward-line (or (turnback--get d :anchor :line) 0))
            (let* ((ov (make-overlay (line-beginning-position) (line-end-position) nil t nil))
                   (detached (turnback-directive-detached-p d)))
              (overlay-put ov 'turnback-directive-overlay t)
              (overlay-put ov 'turnback-directive d)
              (overlay-put ov 'evaporate nil)
              (overlay-put ov 'help-echo (turnback-directive-help d))
              (overlay-put ov 'after-string
                           (concat " " (propertize (turnback-directive-label d)
                                                   'face (if detached 'turnback-directive-detached
                                                           'turnback-directive)
                                                   'help-echo (turnback-directive-help d)))))))))))

(defun turnback-refresh-directives (&optional server)
  "Fetch every directive from SERVER and redraw the overlays."
  (interactive)
  (let* ((server (or server (turnback-current-server)))
         (result (turnback--request server :turnback/directive/list))
         (by-uri (make-hash-table :test #'equal)))
    (dolist (d (turnback--list (plist-get result :directives)))
      (push d (gethash (plist-get d :uri) by-uri)))
    ;; Forget files that no longer have directives, so their overlays go.
    (maphash (lambda (uri _) (unless (gethash uri by-uri) (puthash uri nil by-uri)))
             (turnback--directives server))
    (maphash (lambda (uri ds)
               (let ((ds (vconcat (nreverse ds))))
                 (puthash uri ds (turnback--directives server))
                 (when-let ((buffer (find-buffer-visiting (turnback--uri-to-path uri))))
                   (turnback--apply-directives buffer ds))))
             by-uri)))

(defun turnback-directive-overlays (&optional buffer)
  "The directive overlays of BUFFER, in buffer order."
  (with-current-buffer (or buffer (current-buffer))
    (sort (cl-remove-if-not (lambda (ov) (overlay-get ov 'turnback-directive-overlay))
                            (save-restriction (widen) (overlays-in (point-min) (point-max))))
          (lambda (a b) (< (overlay-start a) (overlay-start b))))))

(defun turnback-directive-at-point ()
  "The directive anchored on the current line, or nil."
  (cl-some (lambda (ov) (overlay-get ov 'turnback-directive))
           (cl-remove-if-not (lambda (ov) (overlay-get ov 'turnback-directive-overlay))
                             (overlays-in (line-beginning-position) (1+ (line-end-position))))))

(defun turnback-directive-add (request)
  "Anchor a new directive with REQUEST on the current line."
  (interactive "sDirective request: ")
  (let ((server (turnback-current-server)))
    (unless buffer-file-name (user-error "turnback: this buffer does not visit a file"))
    (turnback--request server :turnback/directive/upsert
                       (list :uri (turnback--path-to-uri buffer-file-name)
                             :anchor (list :line (1- (line-number-at-pos)) :character 0)
                             :request request))))

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
  (let ((label (completing-read prompt (turnback--completion-table alist) nil t nil nil
                                (caar alist))))
    (or (cdr (assoc label alist))
        (user-error "turnback: no such choice: %s" label))))

;;;; Commands

(defun turnback--rewind (server boundary)
  "Prepare the rewind of SERVER to BOUNDARY and show its confirmation."
  (let ((candidate (turnback--request server :turnback/rewind/prepare (list :boundary boundary))))
    (turnback--confirm server 'rewind boundary candidate)))

;;;###autoload
(defun turnback-rewind-to-prompt ()
  "Rewind to just before a prompt (chosen from the newest)."
  (interactive)
  (let* ((server (turnback-current-server))
         (log (turnback--request server :turnback/session/log))
         (turn (turnback--choose "Rewind to before prompt: " (turnback-prompt-choices log))))
    (turnback--rewind server (list :kind "beforePrompt" :turn turn))))

;;;###autoload
(defun turnback-rewind-at-response ()
  "Rewind to just after a response, keeping that turn."
  (interactive)
  (let* ((server (turnback-current-server))
         (log (turnback--request server :turnback/session/log))
         (turn (turnback--choose "Rewind to after response: " (turnback-response-choices log))))
    (turnback--rewind server (list :kind "afterResponse" :turn turn))))

;;;###autoload
(defun turnback-rewind-before-directive (&optional directive)
  "Rewind to just before an attempt at DIRECTIVE.
The directive is the one anchored at point, or one chosen from the list."
  (interactive)
  (let* ((server (turnback-current-server))
         (directive
          (or directive
              (turnback-directive-at-point)
              (turnback--choose "Directive: "
                                (turnback-directive-choices
                                 (turnback--list
                                  (plist-get (turnback--request server :turnback/directive/list)
                                             :directives))
                                 (turnback--root server)))))
         ;; The overlay's copy may be old: fetch the directive's attempts afresh.
         (fresh (cl-find (plist-get directive :id)
                         (turnback--list
                          (plist-get (turnback--request server :turnback/directive/list
                                                        (list :uri (plist-get directive :uri)))
                                     :directives))
                         :key (lambda (d) (plist-get d :id)) :test #'equal))
         (directive (or fresh directive))
         (choices (turnback-attempt-choices directive)))
    (unless choices
      (user-error "turnback: directive %s has no attempt to rewind before" (plist-get directive :id)))
    (let ((turn (if (= (length choices) 1) (cdar choices)
                  (turnback--choose "Rewind before the attempt of: " choices))))
      (turnback--rewind server (list :kind "beforeDirectiveAttempt"
                                     :directiveId (plist-get directive :id) :turn turn)))))

;;;###autoload
(defun turnback-redo ()
  "Bring back a session state that a rewind replaced."
  (interactive)
  (let* ((server (turnback-current-server))
         (list (turnback--request server :turnback/redo/list)))
    (cond
     ((not (turnback--true-p (plist-get list :available)))
      (message "turnback: Redo is not available here: %s"
               (or (plist-get list :reason) "this store keeps no published heads (store kind pid)"))
      nil)
     ((zerop (length (plist-get list :groups)))
      (message "turnback: nothing to redo: no rewind has replaced a session state yet")
      nil)
     (t
      (let* ((seq (turnback--choose "Redo: " (turnback-redo-choices
                                              (turnback--list (plist-get list :groups)))))
             (plan (turnback--request server :turnback/redo/prepare (list :headSeq seq))))
        (turnback--confirm server 'redo seq plan))))))

;;;; Driving turns by hand (agent integrations use the requests directly)

(defun turnback-request (method &optional params server)
  "Send the contract's METHOD (a keyword) with PARAMS to SERVER; return the result.
SERVER defaults to the current project's.  For agent integrations."
  (turnback--request (or server (turnback-current-server)) method params))

(defun turnback-turn-begin (prompt)
  "Begin a chat turn with PROMPT; its pre-turn checkpoint is fixed on return."
  (interactive "sPrompt: ")
  (let ((turn (plist-get (turnback-request :turnback/turn/begin (list :kind "chat" :prompt prompt))
                         :turn)))
    (message "turnback: turn %s begun; edit and save, then M-x turnback-turn-settle" turn)
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
    map)
  "The turnback commands, to bind to a prefix key of your choice.
For example: (global-set-key (kbd \"C-c t\") \='turnback-command-map).")
(fset 'turnback-command-map turnback-command-map)

;;;; The confirmation buffer

(defvar-local turnback--confirm-state nil
  "Plist (:server :kind :target :plan) of the confirmation shown in this buffer.")

(defvar turnback-confirm-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "y" #'turnback-confirm-commit)
    (define-key map "q" #'turnback-confirm-cancel)
    (define-key map "n" #'turnback-confirm-cancel)
    map)
  "Keymap of `turnback-confirm-mode'.")

(define-derived-mode turnback-confirm-mode special-mode "turnback-confirm"
  "The confirmation of a turnback rewind or redo.  \\<turnback-confirm-mode-map>\
\\[turnback-confirm-commit] commits, \\[turnback-confirm-cancel] cancels."
  (setq truncate-lines nil))

(defun turnback--render (kind plan root)
  "The confirmation text of PLAN for KIND (`rewind' or `redo') relative to ROOT."
  (if (eq kind 'redo) (turnback-render-redo-plan plan root)
    (turnback-render-candidate plan root)))

(defun turnback--confirm (server kind target plan &optional note)
  "Show PLAN of KIND for TARGET (a boundary, or a head) in *turnback-confirm*.
NOTE, when given, is shown above it.  Return the buffer."
  (let ((buffer (get-buffer-create "*turnback-confirm*")))
    (with-current-buffer buffer
      (turnback-confirm-mode)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (when note (insert (turnback--warn note) "\n\n"))
        (insert (turnback--render kind (if (eq kind 'rewind)
                                           (if (plist-get plan :boundary) plan
                                             (plist-put (copy-sequence plan) :boundary target))
                                         plan)
                                  (turnback--root server)))
        (goto-char (point-min)))
      (setq turnback--confirm-state (list :server server :kind kind :target target :plan plan)))
    (pop-to-buffer buffer)
    buffer))

(defun turnback-confirm-cancel ()
  "Close the confirmation without committing."
  (interactive)
  (let ((buffer (get-buffer "*turnback-confirm*")))
    (when buffer
      (let ((win (get-buffer-window buffer)))
        (when (and win (not (one-window-p))) (quit-window nil win)))
      (kill-buffer buffer))
    (message "turnback: cancelled; nothing changed")))

(defun turnback-confirm-commit ()
  "Commit the plan shown in *turnback-confirm*.
When the session changed since the plan was made, show the fresh plan
instead.  Return the commit's result."
  (interactive)
  (let ((buffer (get-buffer "*turnback-confirm*")))
    (unless (and buffer (buffer-local-value 'turnback--confirm-state buffer))
      (user-error "turnback: there is no plan to commit"))
    (let* ((state (buffer-local-value 'turnback--confirm-state buffer))
           (server (plist-get state :server))
           (kind (plist-get state :kind))
           (target (plist-get state :target))
           (plan (plist-get state :plan))
           (result (if (eq kind 'rewind)
                       (turnback--request server :turnback/rewind/commit
                                          (list :boundary target :planHash (plist-get plan :planHash)))
                     (turnback--request server :turnback/redo/commit
                                        (list :headSeq target :planHash (plist-get plan :planHash)))))
           (status (plist-get result :status)))
      (pcase status
        ("committed"
         (turnback-confirm-cancel)
         (turnback--sync-buffers (turnback--list (plist-get plan :files)))
         (message "turnback: %s committed" (if (eq kind 'rewind) "rewind" "redo")))
        ("stale"
         (let ((fresh (or (plist-get result :candidate)
                          (if (eq kind 'rewind)
                              (turnback--request server :turnback/rewind/prepare (list :boundary target))
                            (turnback--request server :turnback/redo/prepare (list :headSeq target))))))
           (turnback--confirm server kind target fresh
                              "The session changed since this plan was made. This is the fresh plan: y commits it.")
           (message "turnback: the plan was stale; review the fresh one")))
        (_
         (with-current-buffer buffer
           (let ((inhibit-read-only t))
             (goto-char (point-min))
             (insert (turnback-render-recovery (turnback--list (plist-get result :recovery))
                                               (turnback--root server))
                     "\n")
             (setq turnback--confirm-state nil)))
         (message "turnback: the %s failed and was rolled back (%s)" kind status)))
      result)))

(defun turnback--sync-buffers (files)
  "Revert unmodified buffers visiting the restored FILES; handle deleted ones."
  (dolist (f files)
    (let* ((path (turnback--uri-to-path (plist-get f :uri)))
           (buffer (find-buffer-visiting path))
           (action (plist-get f :action)))
      (when buffer
        (with-current-buffer buffer
          (cond
           ((buffer-modified-p)
            (message "turnback: %s has unsaved changes; its file on disk was %s" (buffer-name)
                     (if (equal action "delete") "deleted" "restored")))
           ((and (equal action "delete") (not (file-exists-p path)))
            (when turnback-kill-deleted-file-buffers (kill-buffer buffer)))
           ((file-exists-p path)
            (revert-buffer t t t))))))))

;;;; Recovery

(defun turnback-recovery ()
  "Retry or dismiss what a rolled-back rewind or redo could not put back."
  (interactive)
  (let* ((server (turnback-current-server))
         (records (turnback--list (plist-get (turnback--request server :turnback/recovery/list)
                                             :recovery))))
    (if (null records)
        (message "turnback: nothing to recover")
      (let* ((id (turnback--choose "Recovery record: "
                                   (mapcar (lambda (r)
                                             (cons (format "%s %s: %s" (plist-get r :id)
                                                           (plist-get r :operation) (plist-get r :reason))
                                                   (plist-get r :id)))
                                           records)))
             (action (completing-read "Action: " '("retry" "dismiss") nil t)))
        (turnback--request server :turnback/recovery/resolve (list :id id :action action))))))

(provide 'turnback)
;;; turnback.el ends here
