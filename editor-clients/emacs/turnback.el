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
\" TB\" normally, \" TB⚠N\" with N capture gaps, \"↺N\" with N
recovery records to resolve.  The help-echo lists the gaps (file
names relative to ROOT)."
  (let* ((n (or (plist-get status :liveGaps) 0))
         (gaps (turnback--list (plist-get status :gaps)))
         (observer (equal (plist-get status :ownership) "observer"))
         (recovery (or (plist-get status :recovery) 0))
         (text (concat " TB" (if (> n 0) (format "⚠%d" n) "")
                       (if (> recovery 0) (format "↺%d" recovery) "")
                       (if observer ":observer" "")))
         (help (concat
                (if (> n 0)
                    (concat (format "turnback: %s (a rewind cannot put %s back):"
                                    (turnback--plural n "gap") (if (= n 1) "it" "them"))
                            (mapconcat (lambda (g) (concat "\n  " (turnback-format-gap g root)))
                                       gaps ""))
                  "turnback: every file is captured")
                (if observer "\nAnother process owns the store: this session is read-only." "")
                (if (> recovery 0)
                    (format "\n%s to resolve (M-x turnback-recovery)"
                            (turnback--plural recovery "recovery record"))
                  "")
                (if (turnback--true-p (plist-get status :collecting)) "\nCollecting old heads…" "")
                (if (> recovery 0) "\nmouse-1: list the recovery records" "\nmouse-1: list the gaps"))))
    (propertize text
                'face (when (or (> n 0) (> recovery 0)) 'turnback-mode-line-warning)
                'help-echo help
                'mouse-face 'mode-line-highlight
                'local-map (let ((map (make-sparse-keymap)))
                             (define-key map [mode-line mouse-1]
                                         (if (> recovery 0) #'turnback-recovery #'turnback-show-gaps))
                             map))))

(defun turnback-stopped-mode-line-string (why)
  "The mode-line indicator of a sidecar that stopped, WHY being how."
  (propertize " TB:stopped" 'face 'turnback-mode-line-warning
              'help-echo (format "turnback: the sidecar stopped (%s).\nM-x turnback-start restarts it."
                                 why)))

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
                              (if (turnback-user-edit-p f)
                                  (turnback--warn (format "  (your edit, %s)" (turnback-user-edit-by f)))
                                ""))))
                  shown ""))
     (if (> unchanged 0) (format "  (%s unchanged)\n" (turnback--plural unchanged "file")) ""))))

(defconst turnback--user-edit-words
  '(("editor-save" . "saved in the editor")
    ("disk-change" . "changed on disk")
    ("capture-request" . "captured between turns")
    ("uncaptured" . "changed on disk, not captured yet"))
  "Who made a user edit (FilePlan userEditBy), in words.")

(defun turnback-user-edit-p (file)
  "Non-nil when the plan would undo a change to FILE that no discarded turn made.
A server without the userEdit field flags only externalChange."
  (and (not (equal (plist-get file :action) "unchanged"))
       (turnback--true-p (if (plist-member file :userEdit) (plist-get file :userEdit)
                           (plist-get file :externalChange)))))

(defun turnback-user-edit-by (file)
  "Who made the user edit of FILE, in words."
  (or (cdr (assoc (plist-get file :userEditBy) turnback--user-edit-words))
      "no discarded turn made it"))

(defun turnback-user-edits (plan)
  "The FilePlans of PLAN that are the user's own edits."
  (cl-remove-if-not #'turnback-user-edit-p (turnback--list (plist-get plan :files))))

(defun turnback--render-external (files root)
  "The section listing the user's edits among FILES, relative to ROOT."
  (let ((edits (cl-remove-if-not #'turnback-user-edit-p files)))
    (concat (turnback--heading "Your edits that will be overwritten")
            (if (null edits) "  none\n"
              (concat
               (mapconcat (lambda (f)
                            (turnback--warn
                             (format "  %s (%s)\n" (turnback--display-path (plist-get f :uri) root)
                                     (turnback-user-edit-by f))))
                          edits "")
               "  (k commits but leaves these files as they are now)\n")))))

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
     (turnback--render-effects effects (plist-get candidate :stepSummaries))
     "\n" (turnback--heading "Directives")
     (if (null directives) "  no directive changes\n"
       (mapconcat (lambda (d)
                    (format "  %s%s: %s discarded, becomes %s\n"
                            (plist-get d :id)
                            (let ((name (or (plist-get d :request)
                                            (cdr (assoc (plist-get d :id)
                                                        (plist-get candidate :directiveNames))))))
                              (if name (format " “%s”" (turnback-directive-name name)) ""))
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
     "\n" (turnback--keys-line "rewind" files) "\n")))

(defun turnback--keys-line (what files)
  "The keys of a confirmation for WHAT (rewind or redo) of FILES."
  (propertize (concat (format "y: commit this %s    " what)
                      (if (cl-some #'turnback-user-edit-p files) "k: commit, keeping your edits    " "")
                      "q: cancel")
              'face 'bold))

(defun turnback-directive-name (request)
  "A directive's name: the first line of its REQUEST, shortened."
  (turnback--one-line (car (split-string (or request "") "\n")) 50))

(defun turnback--render-effects (effects summaries)
  "The seven effect lists of EFFECTS.
Step ids get their SUMMARIES (an alist of id and text)."
  (mapconcat (lambda (cell)
               (let ((ids (turnback--list (plist-get effects (car cell)))))
                 (format "  %-22s %s: %s\n" (substring (symbol-name (car cell)) 1) (cdr cell)
                         (if ids
                             (mapconcat (lambda (x)
                                          (let ((text (cdr (assoc x summaries))))
                                            (if (and text (not (string-empty-p text)))
                                                (format "%s “%s”" x (turnback--one-line text 50))
                                              (format "%s" x))))
                                        ids ", ")
                           "none"))))
             turnback--effect-labels ""))

(defun turnback-render-redo-plan (plan &optional root title)
  "The confirmation text for the redo PLAN, relative to ROOT.
PLAN is the result of `turnback/redo/prepare'; TITLE heads it."
  (let ((files (turnback--list (plist-get plan :files)))
        (gaps (turnback--list (plist-get plan :gaps))))
    (concat
     (propertize (or title (format "Redo: bring back head %s" (plist-get plan :headSeq)))
                 'face '(:inherit turnback-confirm-heading :height 1.2))
     "\n\n"
     (turnback--heading "Would bring back")
     (format "  %s (head %s)\n" (turnback--plural (or (plist-get plan :turnCount) 0) "turn")
             (plist-get plan :headSeq))
     (turnback--heading "Would replace")
     (format "  the session as it is now%s; it stays available in Redo\n"
             (if (plist-get plan :currentHead) (format " (head %s)" (plist-get plan :currentHead)) ""))
     "\n" (turnback--render-files files root)
     "\n" (turnback--render-external files root)
     "\n" (turnback--render-gaps gaps root)
     (if (plist-get plan :summary)
         (concat "\n" (turnback--heading "Summary") (turnback--fill (plist-get plan :summary)))
       "")
     "\n" (turnback--keys-line "redo" files) "\n")))

(defun turnback-render-recovery (records &optional root what)
  "Text describing the outcome of a rolled-back commit of WHAT.
RECORDS are its Recovery records; ROOT shortens paths."
  (let ((what (or what "commit")))
    (if (null records)
        (concat (turnback--heading (format "The %s failed and was rolled back." what))
                "  Nothing changed: the files and the session are as they were before it.\n")
      (concat (turnback--heading (format "The %s failed and was rolled back, but not completely." what))
              "  The session is as it was before it.  These files could not be put back;\n"
              "  turnback kept the images that would put them back:\n"
              (mapconcat (lambda (r) (turnback-render-recovery-record r root)) records "")
              "Use M-x turnback-recovery to retry or dismiss them.\n"))))

(defun turnback-render-recovery-record (record &optional root)
  "Lines describing one Recovery RECORD, relative to ROOT.
Its paths, and the images that would put them back."
  (concat (format "  %s (%s%s): %s\n" (plist-get record :id) (plist-get record :operation)
                  (if (numberp (plist-get record :created))
                      (format-time-string ", %Y-%m-%d %H:%M" (plist-get record :created)) "")
                  (plist-get record :reason))
          (mapconcat (lambda (u) (format "    not put back: %s\n" (turnback--display-path u root)))
                     (turnback--list (plist-get record :paths)) "")
          (mapconcat (lambda (b)
                       (format "    image that puts it back: %s %s\n"
                               (turnback--display-path (plist-get b :uri) root)
                               (turnback--short-digest (plist-get b :digest))))
                     (turnback--list (plist-get record :backups)) "")))

(defun turnback--short-digest (digest)
  "DIGEST as a person reads it."
  (cond ((null digest) "unknown")
        ((equal digest "absent") "(absent)")
        (t (substring digest 0 (min 8 (length digest))))))

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

(defconst turnback--all-states-choice "all states… (also the earlier moments of this line)"
  "The Redo picker's entry that lists every earlier state.")

(defun turnback-redo-choices (groups &optional hidden)
  "Completion choices for Redo GROUPS: (LABEL . HEADSEQ), newest first.
Each says what it would change.  When HIDDEN earlier states were
left out, a last entry (value `all') offers every state."
  (append
   (mapcar (lambda (g)
             (let ((changes (plist-get g :changes)))
               (cons (format "head %s: %s, last prompt “%s”%s%s%s"
                             (plist-get g :headSeq)
                             (turnback--plural (or (plist-get g :turnCount) 0) "turn")
                             (turnback--one-line (plist-get g :lastPrompt) 50)
                             (if changes
                                 (format "; changes %s%s" (turnback--plural (or (plist-get changes :files) 0) "file")
                                         (if (turnback--list (plist-get changes :paths))
                                             (concat ": " (mapconcat #'identity (turnback--list (plist-get changes :paths)) ", "))
                                           ""))
                               "")
                             (if (turnback--true-p (plist-get g :ancestor)) " (earlier on this line)" "")
                             (if (numberp (plist-get g :created))
                                 (format-time-string "  (%Y-%m-%d %H:%M)" (plist-get g :created))
                               ""))
                     (plist-get g :headSeq))))
           groups)
   (when (and hidden (> hidden 0)) (list (cons turnback--all-states-choice 'all)))))

;;;; The server class and its connection

(defclass turnback-server (eglot-lsp-server)
  ((root :initarg :root :accessor turnback--root
         :documentation "Workspace root (a directory name, resolved).")
   (status :initform nil :accessor turnback--status
           :documentation "Last `turnback/status' params.")
   (directives :initform (make-hash-table :test #'equal) :accessor turnback--directives
               :documentation "Map of URI to the last list of directives for it.")
   (epoch :initform nil :accessor turnback--epoch
          :documentation "Last `turnback/epoch' params.")
   (recovered :initform nil :accessor turnback--recovered
              :documentation "The `turnback/recovered' params, if the server recovered anything."))
  :documentation "A connection to the turnback sidecar of one workspace.")

(cl-defmethod eglot-initialization-options ((_server turnback-server))
  "The store options, from the customisation."
  (or (turnback--initialization-options) (make-hash-table)))

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

(defun turnback--request (server method &optional params)
  "Send METHOD with PARAMS to SERVER and return the result.
A JSON-RPC error becomes a `user-error' naming its code; a sidecar
that is gone, a `user-error' that says so and how to restart it."
  (unless (turnback--live-p server)
    (turnback--reap)
    (user-error "turnback: the sidecar for %s is not running (%s); M-x turnback-start restarts it"
                (abbreviate-file-name (turnback--root server))
                (or (cdr (assoc (turnback--root server) turnback--stopped)) "it stopped")))
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
      (turnback-refresh-directives server)
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
  (unless (process-get (jsonrpc--process server) 'turnback-cleaned-up)
    (process-put (jsonrpc--process server) 'turnback-cleaned-up t)
    (turnback--clean-up server)))

(defun turnback--clean-up (server)
  "Forget SERVER, its watches and overlays; say how it stopped unless asked to."
  (setq turnback--servers (cl-remove server turnback--servers :key #'cdr))
  (maphash (lambda (_id watches) (mapc #'file-notify-rm-watch watches))
           (eglot--file-watches server))
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and buffer-file-name (file-in-directory-p buffer-file-name (turnback--root server)))
        (turnback--clear-overlays))))
  (unless (eglot--shutdown-requested server)
    (let* ((proc (jsonrpc--process server))
           (how (format "%s %s" (process-status proc) (process-exit-status proc)))
           (how (pcase (process-status proc)
                  ('signal (format "killed by signal %s" (process-exit-status proc)))
                  ('exit (format "exit status %s" (process-exit-status proc)))
                  (_ how)))
           (events (jsonrpc-events-buffer server)))
      (push (cons (turnback--root server) how) turnback--stopped)
      ;; The events buffer holds the exchange and the sidecar's stderr: say so in it too, so the
      ;; buffer the message names is never empty.
      (with-current-buffer events
        (let ((inhibit-read-only t))
          (goto-char (point-max))
          (insert (format "[turnback.el] the sidecar stopped: %s\n" how))))
      (message "turnback: the sidecar for %s stopped (%s); its messages and errors are in the buffer %s.  \
M-x turnback-start restarts it"
               (abbreviate-file-name (turnback--root server)) how (buffer-name events))))
  (force-mode-line-update t))

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
  ((server turnback-server) (_method (eql turnback/recovered)) &rest params)
  "The server finished or rolled back what a crash interrupted: say what."
  (setf (turnback--recovered server) params)
  (turnback--say-recovered params)
  (run-hook-with-args 'turnback-recovered-functions params))

(defun turnback--say-recovered (params)
  "Show the sentence of a `turnback/recovered' PARAMS plist in the echo area."
  (message "turnback: %s" (or (plist-get params :message) "recovered an interrupted transaction")))

(cl-defmethod eglot-handle-notification
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
                                                   'mouse-face 'highlight
                                                   'keymap (turnback--directive-label-map d)
                                                   'help-echo (concat (turnback-directive-help d)
                                                                      "\nmouse-1: the directive panel")))))))))))

(defun turnback--directive-label-map (directive)
  "A keymap for DIRECTIVE's label: a click opens its panel."
  (let ((map (make-sparse-keymap)))
    (define-key map [mouse-1] (lambda () (interactive) (turnback-directive-panel directive)))
    map))

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
  (let ((label (completing-read (format-prompt (string-trim-right prompt "[: ]+") (caar alist))
                                (turnback--completion-table alist) nil t nil nil
                                (caar alist))))
    (or (cdr (assoc label alist))
        (user-error "turnback: no such choice: %s" label))))

;;;; Commands

(defun turnback--rewind (server boundary)
  "Prepare the rewind of SERVER to BOUNDARY and show its confirmation.
A boundary equal to the current state shows nothing: there is nothing to rewind."
  (let ((candidate (turnback--request server :turnback/rewind/prepare (list :boundary boundary))))
    (if (turnback--true-p (plist-get candidate :noop))
        (progn (message "turnback: nothing to rewind: turn %s is the current state"
                        (turnback--get candidate :keep :turnCount))
               nil)
      (turnback--confirm server 'rewind boundary (turnback--annotate server candidate)))))

(defun turnback--annotate (server plan)
  "PLAN with what the command line shows beside it.
Step summaries from SERVER's log and directive names."
  (let* ((log (ignore-errors (turnback--request server :turnback/session/log)))
         (steps (cl-loop for turn in (turnback--list (plist-get log :turns))
                         append (mapcar (lambda (s) (cons (plist-get s :id) (plist-get s :summary)))
                                        (turnback--list (plist-get turn :stepList)))))
         (directives (turnback--list (plist-get (ignore-errors
                                                  (turnback--request server :turnback/directive/list))
                                                :directives))))
    (append (list :stepSummaries steps
                  :directiveNames (mapcar (lambda (d) (cons (plist-get d :id) (plist-get d :request)))
                                          directives))
            plan)))

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
     ((and (not (turnback--true-p (plist-get list :available)))
           (not (and (numberp (plist-get list :hidden)) (> (plist-get list :hidden) 0))))
      (message "turnback: Redo is not available here: %s"
               (or (plist-get list :reason) "this store keeps no published heads (store kind pid)"))
      nil)
     ((and (zerop (length (plist-get list :groups))) (not (plist-get list :hidden)))
      (message "turnback: nothing to redo: no rewind has replaced a session state yet")
      nil)
     (t
      (let ((seq (turnback--choose "Redo (states a rewind left behind): "
                                   (turnback-redo-choices (turnback--list (plist-get list :groups))
                                                          (plist-get list :hidden)))))
        (when (eq seq 'all)
          (let ((every (turnback--request server :turnback/redo/list (list :all t))))
            (setq seq (turnback--choose "Redo (all states): "
                                        (turnback-redo-choices (turnback--list (plist-get every :groups)))))))
        (turnback--confirm server 'redo seq
                           (turnback--request server :turnback/redo/prepare (list :headSeq seq))))))))

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
    map)
  "The turnback commands, to bind to a prefix key of your choice.
For example: (global-set-key (kbd \"C-c t\") \\='turnback-command-map).")
(fset 'turnback-command-map turnback-command-map)

;;;; The confirmation buffer

(defvar-local turnback--confirm-state nil
  "Plist (:server :kind :target :plan) of the confirmation shown in this buffer.")

(defvar turnback-confirm-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "y" #'turnback-confirm-commit)
    (define-key map "k" #'turnback-confirm-commit-keeping-edits)
    (define-key map "q" #'turnback-confirm-cancel)
    (define-key map "n" #'turnback-confirm-cancel)
    map)
  "Keymap of `turnback-confirm-mode'.")

(define-derived-mode turnback-confirm-mode special-mode "turnback-confirm"
  "The confirmation of a turnback rewind, redo or fork.
\\<turnback-confirm-mode-map>\\[turnback-confirm-commit] commits, \
\\[turnback-confirm-commit-keeping-edits] commits but leaves your
own edits as they are, \\[turnback-confirm-cancel] cancels."
  (setq truncate-lines nil))

(defun turnback--render (kind plan root)
  "The confirmation text of PLAN for KIND, relative to ROOT.
KIND is `rewind', `redo' or `fork'."
  (pcase kind
    ('redo (turnback-render-redo-plan plan root))
    ('fork (turnback-render-fork-report plan root))
    (_ (turnback-render-candidate plan root))))

(defun turnback--confirm (server kind target plan &optional note)
  "Show PLAN of KIND for TARGET in *turnback-confirm*.
TARGET is a boundary, a head or a turn.
NOTE, when given, is shown above it.  Return the buffer."
  (let ((buffer (get-buffer-create "*turnback-confirm*")))
    (with-current-buffer buffer
      (turnback-confirm-mode)
      (let ((inhibit-read-only t))
        (erase-buffer)
        (when note (insert (turnback--warn note) "\n\n"))
        (insert (turnback--render kind (if (and (eq kind 'rewind) (not (plist-get plan :boundary)))
                                           (plist-put (copy-sequence plan) :boundary target)
                                         plan)
                                  (turnback--root server)))
        (goto-char (point-min)))
      (setq turnback--confirm-state (list :server server :kind kind :target target :plan plan)))
    (pop-to-buffer buffer)
    buffer))

(defun turnback--close-confirm ()
  "Close the confirmation buffer, saying nothing."
  (let ((buffer (get-buffer "*turnback-confirm*")))
    (when buffer
      (let ((win (get-buffer-window buffer)))
        (when (and win (not (one-window-p))) (quit-window nil win)))
      (kill-buffer buffer))))

(defun turnback-confirm-cancel ()
  "Close the confirmation without committing."
  (interactive)
  (turnback--close-confirm)
  (message "turnback: cancelled; nothing changed"))

(defun turnback-confirm-commit-keeping-edits ()
  "Commit the plan shown, leaving every file listed as your own edit as it is now."
  (interactive)
  (turnback-confirm-commit t))

(defun turnback--server-gone (server)
  "The confirmation's SERVER is gone: invalidate it, say so, offer a restart."
  (let ((root (turnback--root server)))
    (turnback--close-confirm)
    (if (y-or-n-p (format "turnback: the sidecar for %s is gone (%s), and this plan with it.  Restart it? "
                          (abbreviate-file-name root)
                          (or (cdr (assoc root turnback--stopped)) "it stopped")))
        (progn (turnback-start root)
               (message "turnback: restarted the sidecar; nothing was committed: prepare the %s again"
                        "rewind"))
      (message "turnback: the sidecar is gone; nothing was committed (M-x turnback-start restarts it)"))
    nil))

;; After a committed rewind of a Claude Code session the server names the command that resumes the
;; agent at the same boundary (docs/agents/claude-code.md).
(defun turnback--agent-resume-note (result)
  "The resume command of RESULT's `agentResume', as a sentence, or nil."
  (let ((resume (plist-get result :agentResume)))
    (when resume
      (let ((command (plist-get resume :command)))
        (if (and command (stringp command))
            (format "resume the agent with: %s" command)
          (let ((note (plist-get resume :note)))
            (and (stringp note) note)))))))

(defun turnback--commit-request (server kind target plan keep)
  "Send the commit of PLAN of KIND for TARGET to SERVER.
With KEEP, the user's edits are kept."
  (let ((keep (when keep (list :keepUserEdits t))))
    (pcase kind
      ('rewind (turnback--request server :turnback/rewind/commit
                                  (append (list :boundary target :planHash (plist-get plan :planHash)) keep)))
      ('redo (turnback--request server :turnback/redo/commit
                                (append (list :headSeq target :planHash (plist-get plan :planHash)) keep)))
      ('fork (turnback--request server :turnback/fork/confirm
                                (append (list :turn target :hash (plist-get plan :hash)) keep))))))

(defun turnback--prepare-again (server kind target)
  "A fresh plan of KIND for TARGET from SERVER."
  (pcase kind
    ('rewind (turnback--annotate server (turnback--request server :turnback/rewind/prepare
                                                          (list :boundary target))))
    ('redo (turnback--request server :turnback/redo/prepare (list :headSeq target)))
    ('fork (turnback--request server :turnback/fork/prepare (list :turn target)))))

(defun turnback-confirm-commit (&optional keep-user-edits)
  "Commit the plan shown in *turnback-confirm*.
With KEEP-USER-EDITS, the files listed as your own edits stay as
they are now.  When the session changed since the plan was made,
show the fresh plan instead.  One message says the outcome; warnings
about buffers with unsaved changes follow it.  Return the result."
  (interactive)
  (let ((buffer (get-buffer "*turnback-confirm*")))
    (unless (and buffer (buffer-local-value 'turnback--confirm-state buffer))
      (user-error "turnback: there is no plan to commit"))
    (let* ((state (buffer-local-value 'turnback--confirm-state buffer))
           (server (plist-get state :server))
           (kind (plist-get state :kind))
           (target (plist-get state :target))
           (plan (plist-get state :plan))
           (what (symbol-name kind)))
      (if (not (turnback--live-p server))
          (progn (turnback--reap) (turnback--server-gone server))
        (let* ((result (turnback--commit-request server kind target plan keep-user-edits))
               (status (plist-get result :status)))
          (pcase status
            ((or "committed" "forked")
             (turnback--close-confirm)
             (let* ((root (turnback--root server))
                    (kept (turnback--list (plist-get result :kept)))
                    (files (cl-remove-if (lambda (f) (member (plist-get f :uri) kept))
                                         (turnback--list (plist-get plan :files))))
                    (warnings (if (eq kind 'fork)
                                  ;; every buffer whose file the fork changed: kept ones did not
                                  (turnback--sync-changed-buffers root)
                                (turnback--sync-buffers files))))
               (message "%s" (string-join
                              (delq nil
                                    (list (if (equal status "forked")
                                              (format "turnback: forked at turn %s: the new session is %s; %s is frozen"
                                                      target (turnback--get result :branch :sessionId)
                                                      (turnback--get result :branch :parentId))
                                            (format "turnback: %s committed" what))
                                          (when kept
                                            (format "kept your edits to %s"
                                                    (mapconcat (lambda (u) (turnback--display-path u root))
                                                               kept ", ")))
                                          (when warnings (string-join warnings "; "))
                                          (turnback--agent-resume-note result)))
                              "; "))))
            ("nothing-to-do"
             (turnback--close-confirm)
             (message "turnback: nothing to %s: this is the current state" what))
            ("stale"
             (let ((fresh (or (plist-get result :candidate) (plist-get result :plan)
                              (plist-get result :report)
                              (turnback--prepare-again server kind target))))
               (turnback--confirm server kind target
                                  (if (eq kind 'rewind) (turnback--annotate server fresh) fresh)
                                  "The session changed since this plan was made. This is the fresh plan: y commits it.")
               (message "turnback: the plan was stale; review the fresh one")))
            ("refused"
             (turnback--close-confirm)
             (message "turnback: the %s was refused: %s" what
                      (or (turnback--get result :refusal :message) (turnback--get result :report :summary)
                          "see the session")))
            (_
             (with-current-buffer buffer
               (let ((inhibit-read-only t))
                 (erase-buffer)
                 (insert (turnback-render-recovery (turnback--list (plist-get result :recovery))
                                                   (turnback--root server) what)
                         (if (plist-get result :message)  ; the server's own sentence about it
                             (concat "\n" (turnback--fill (plist-get result :message)))
                           "")
                         "\n")
                 (goto-char (point-min))
                 (setq turnback--confirm-state nil)))
             (message "turnback: the %s failed and was rolled back%s" what
                      (if (turnback--list (plist-get result :recovery))
                          "; some files could not be put back (M-x turnback-recovery)"
                        "; nothing changed"))))
          result)))))

(defun turnback--sync-changed-buffers (root)
  "Revert the unmodified buffers under ROOT whose file changed on disk.
Return the warnings about modified ones."
  (let (warnings)
    (dolist (buffer (buffer-list))
      (with-current-buffer buffer
        (when (and buffer-file-name (file-in-directory-p buffer-file-name root)
                   (not (verify-visited-file-modtime buffer)))
          (cond ((buffer-modified-p)
                 (push (format "%s has unsaved changes; its file on disk changed" (buffer-name))
                       warnings))
                ((file-exists-p buffer-file-name) (revert-buffer t t t))
                (turnback-kill-deleted-file-buffers (kill-buffer buffer))))))
    (nreverse warnings)))

(defun turnback--sync-buffers (files)
  "Revert unmodified buffers visiting the restored FILES; handle deleted ones.
Return the warnings about buffers with unsaved changes."
  (let (warnings)
    (dolist (f files)
      (let* ((path (turnback--uri-to-path (plist-get f :uri)))
             (buffer (find-buffer-visiting path))
             (action (plist-get f :action)))
        (when buffer
          (with-current-buffer buffer
            (cond
             ((buffer-modified-p)
              (push (format "%s has unsaved changes; its file on disk was %s" (buffer-name)
                            (if (equal action "delete") "deleted" "restored"))
                    warnings))
             ((and (equal action "delete") (not (file-exists-p path)))
              (when turnback-kill-deleted-file-buffers (kill-buffer buffer)))
             ((file-exists-p path)
              (revert-buffer t t t)))))))
    (nreverse warnings)))

;;;; Recovery

(defvar-local turnback--recovery-server nil
  "The server whose recovery records this buffer lists.")

(defvar turnback-recovery-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "r" #'turnback-recovery-retry)
    (define-key map "d" #'turnback-recovery-dismiss)
    (define-key map "g" #'turnback-recovery-refresh)
    (define-key map "n" #'turnback--next-item)
    (define-key map "p" #'turnback--previous-item)
    map)
  "Keymap of `turnback-recovery-mode'.")

(define-derived-mode turnback-recovery-mode special-mode "turnback-recovery"
  "What failed rollbacks could not put back.
\\<turnback-recovery-mode-map>\\[turnback-recovery-retry] retries the record at point (puts its
images back), \\[turnback-recovery-dismiss] dismisses it (you took care of it),
\\[turnback-recovery-refresh] refreshes.")

(defun turnback-render-recovery-list (records root)
  "The text of the recovery buffer for RECORDS, relative to ROOT."
  (concat
   (turnback--heading (format "turnback: %s" (if records (turnback--plural (length records) "recovery record")
                                               "nothing to recover")))
   (if (null records)
       "  Every rewind and redo put everything back.\n"
     (concat
      "  A rewind or redo failed, and its rollback could not put these files back.\n"
      "  r: retry (put the images back)    d: dismiss (you took care of it)    g: refresh\n\n"
      (mapconcat (lambda (r)
                   (propertize (turnback-render-recovery-record r root)
                               'turnback-item (plist-get r :id)))
                 records "\n")))))

;;;###autoload
(defun turnback-recovery ()
  "List what failed rollbacks could not put back, with Retry and Dismiss."
  (interactive)
  (let ((server (turnback-current-server)))
    (with-current-buffer (get-buffer-create "*turnback-recovery*")
      (turnback-recovery-mode)
      (setq turnback--recovery-server server)
      (turnback-recovery-refresh)
      (pop-to-buffer (current-buffer)))))

(defun turnback-recovery-refresh ()
  "Fetch the recovery records again."
  (interactive)
  (let* ((server turnback--recovery-server)
         (records (turnback--list (plist-get (turnback--request server :turnback/recovery/list)
                                             :recovery)))
         (inhibit-read-only t)
         (pos (point)))
    (erase-buffer)
    (insert (turnback-render-recovery-list records (turnback--root server)))
    (goto-char (min pos (point-max)))
    (unless (get-text-property (point) 'turnback-item) (turnback--next-item))
    records))

(defun turnback--recovery-resolve (action)
  "Resolve the record at point with ACTION (\"retry\" or \"dismiss\")."
  (let ((id (get-text-property (point) 'turnback-item)))
    (unless id (user-error "turnback: no recovery record at point"))
    (let* ((result (turnback--request turnback--recovery-server :turnback/recovery/resolve
                                      (list :id id :action action)))
           (status (plist-get result :status)))
      (turnback-recovery-refresh)
      (message "turnback: %s" (pcase status
                                ("resolved" (format "recovery %s retried: its files are put back" id))
                                ("dismissed" (format "recovery %s dismissed: you took care of it" id))
                                ("failed" (format "recovery %s: the retry failed again; the record stays" id))
                                (_ (format "recovery %s: %s" id status))))
      result)))

(defun turnback-recovery-retry ()
  "Put back the images of the recovery record at point."
  (interactive)
  (turnback--recovery-resolve "retry"))

(defun turnback-recovery-dismiss ()
  "Record that you took care of the recovery record at point."
  (interactive)
  (turnback--recovery-resolve "dismiss"))

(defun turnback--next-item ()
  "Move to the next item (turn, attempt or record) of a turnback buffer."
  (interactive)
  (let ((here (get-text-property (point) 'turnback-item))
        (pos (point)))
    (while (and (< pos (point-max)) (equal (get-text-property pos 'turnback-item) here))
      (setq pos (1+ pos)))
    (while (and (< pos (point-max)) (null (get-text-property pos 'turnback-item)))
      (setq pos (1+ pos)))
    (when (get-text-property pos 'turnback-item) (goto-char pos))))

(defun turnback--previous-item ()
  "Move to the previous item of a turnback buffer."
  (interactive)
  (let ((pos (point)))
    (while (and (> pos (point-min)) (get-text-property pos 'turnback-item)
                (equal (get-text-property (1- pos) 'turnback-item) (get-text-property pos 'turnback-item)))
      (setq pos (1- pos)))
    (setq pos (max (point-min) (1- pos)))
    (while (and (> pos (point-min)) (null (get-text-property pos 'turnback-item)))
      (setq pos (1- pos)))
    (while (and (> pos (point-min)) (equal (get-text-property (1- pos) 'turnback-item)
                                           (get-text-property pos 'turnback-item)))
      (setq pos (1- pos)))
    (when (get-text-property pos 'turnback-item) (goto-char pos))))

;;;; The session view: the equivalent of `turnback log'

(defvar-local turnback--view-server nil
  "The server whose session (or directive) this buffer shows.")

(defvar turnback-session-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "r" #'turnback-session-rewind-at-response)
    (define-key map "b" #'turnback-session-rewind-before-prompt)
    (define-key map "f" #'turnback-session-fork)
    (define-key map "R" #'turnback-session-redo)
    (define-key map "D" #'turnback-session-directive)
    (define-key map "g" #'turnback-session-refresh)
    (define-key map "n" #'turnback--next-item)
    (define-key map "p" #'turnback--previous-item)
    map)
  "Keymap of `turnback-session-mode'.")

(define-derived-mode turnback-session-mode special-mode "turnback-session"
  "The turns of a turnback session, with actions on the turn at point.
\\<turnback-session-mode-map>\\[turnback-session-rewind-at-response] rewinds to just after its
response, \\[turnback-session-rewind-before-prompt] to just before its prompt,
\\[turnback-session-fork] forks at its response, \\[turnback-session-redo] offers Redo,
\\[turnback-session-directive] shows its directive, \\[turnback-session-refresh] refreshes,
\\[turnback--next-item] and \\[turnback--previous-item] move between turns."
  (setq truncate-lines t))

(defun turnback-render-session (log info root)
  "The session view text of LOG and INFO, relative to ROOT.
LOG is `turnback/session/log', INFO `turnback/session/info'."
  (let* ((turns (turnback--list (plist-get log :turns)))
         (gaps (or (plist-get info :liveGaps) 0))
         (recovery (or (plist-get info :recovery) 0)))
    (concat
     (turnback--heading (format "turnback session %s" (or (plist-get info :sessionId)
                                                           (plist-get log :sessionId) "")))
     (format "  %s store · %s · head %s · %s%s%s\n"
             (or (plist-get info :storeKind) "?") (turnback--plural (length turns) "turn")
             (or (plist-get info :headSeq) "none") (or (plist-get info :ownership) "?")
             (if (> gaps 0) (format " · %s" (turnback--plural gaps "live gap")) "")
             (if (> recovery 0) (format " · %s (M-x turnback-recovery)"
                                        (turnback--plural recovery "recovery record"))
               ""))
     "  r: rewind after this response   b: rewind before this prompt   f: fork here\n"
     "  R: redo…   D: this turn's directive   g: refresh   n/p: next/previous turn\n\n"
     (if (null turns) "  No turns yet.\n"
       (mapconcat (lambda (turn) (propertize (turnback--render-turn turn root)
                                             'turnback-item (plist-get turn :turn)))
                  turns "\n")))))

(defun turnback--render-turn (turn root)
  "The lines of one TURN of a session log, relative to ROOT."
  (let ((files (turnback--list (plist-get turn :files)))
        (steps (turnback--list (plist-get turn :stepList)))
        (gaps (turnback--list (plist-get turn :gaps))))
    (concat
     (propertize (format "Turn %s · %s · %s%s\n" (plist-get turn :turn) (plist-get turn :kind)
                         (plist-get turn :state)
                         (if (plist-get turn :directiveId)
                             (format " · directive %s" (plist-get turn :directiveId)) ""))
                 'face 'turnback-confirm-heading)
     (format "  prompt:  %s\n" (turnback--one-line (plist-get turn :prompt) 70))
     (if (and (plist-get turn :response) (not (string-empty-p (plist-get turn :response))))
         (format "  answer:  %s\n" (turnback--one-line (plist-get turn :response) 70))
       "")
     (if files
         (concat "  files:\n"
                 (mapconcat
                  (lambda (f)
                    (if (and (equal (plist-get f :before) "absent") (equal (plist-get f :after) "absent"))
                        (format "    %s  created and removed in this turn\n"
                                (turnback--display-path (plist-get f :uri) root))
                      (format "    %s  %s -> %s  checkpoint %s\n"
                              (turnback--display-path (plist-get f :uri) root)
                              (turnback--short-digest (plist-get f :before))
                              (turnback--short-digest (plist-get f :after))
                              (plist-get f :checkpoint))))
                  files ""))
       "")
     (if steps
         (concat "  steps:\n"
                 (mapconcat (lambda (s)
                              (format "    %-6s %-13s scope %-8s %s\n" (plist-get s :id) (plist-get s :kind)
                                      (plist-get s :scope)
                                      (turnback--one-line (plist-get s :summary) 50)))
                            steps ""))
       "")
     (if gaps
         (concat (format "  %s:\n" (turnback--plural (length gaps) "gap"))
                 (mapconcat (lambda (g) (turnback--warn (concat "    " (turnback-format-gap g root) "\n")))
                            gaps ""))
       ""))))

;;;###autoload
(defun turnback-session ()
  "Show the session: its turns, prompts, states, files and gaps.
Rewind, fork and redo act on the turn at point."
  (interactive)
  (let ((server (turnback-current-server)))
    (with-current-buffer (get-buffer-create "*turnback-session*")
      (turnback-session-mode)
      (setq turnback--view-server server)
      (setq default-directory (turnback--root server))
      (turnback-session-refresh)
      (pop-to-buffer (current-buffer)))))

(defun turnback-session-refresh ()
  "Fetch the session log again and redraw, keeping point on the same turn."
  (interactive)
  (let* ((server turnback--view-server)
         (turn (get-text-property (point) 'turnback-item))
         (log (turnback--request server :turnback/session/log))
         (info (turnback--request server :turnback/session/info))
         (inhibit-read-only t))
    (erase-buffer)
    (insert (turnback-render-session log info (turnback--root server)))
    (goto-char (point-min))
    (let ((pos (and turn (text-property-any (point-min) (point-max) 'turnback-item turn))))
      (if pos (goto-char pos) (turnback--next-item)))))

(defun turnback--turn-at-point ()
  "The turn number at point in the session view."
  (or (get-text-property (point) 'turnback-item)
      (user-error "turnback: no turn at point")))

(defun turnback-session-rewind-at-response ()
  "Rewind to just after the response of the turn at point."
  (interactive)
  (turnback--rewind turnback--view-server (list :kind "afterResponse" :turn (turnback--turn-at-point))))

(defun turnback-session-rewind-before-prompt ()
  "Rewind to just before the prompt of the turn at point."
  (interactive)
  (turnback--rewind turnback--view-server (list :kind "beforePrompt" :turn (turnback--turn-at-point))))

(defun turnback-session-fork ()
  "Fork the session at the response of the turn at point."
  (interactive)
  (turnback--fork turnback--view-server (turnback--turn-at-point)))

(defun turnback-session-redo ()
  "Offer Redo (from the session view)."
  (interactive)
  (let ((default-directory (turnback--root turnback--view-server)))
    (turnback-redo)))

(defun turnback-session-directive ()
  "Show the directive the turn at point attempted."
  (interactive)
  (let* ((n (turnback--turn-at-point))
         (turn (cl-find n (turnback--list (plist-get (turnback--request turnback--view-server
                                                                        :turnback/session/log)
                                                     :turns))
                        :key (lambda (x) (plist-get x :turn))))
         (id (plist-get turn :directiveId)))
    (unless id (user-error "turnback: turn %s is not a directive turn" n))
    (turnback-directive-panel (turnback--directive-by-id turnback--view-server id))))

;;;; Fork at this response

(defconst turnback--fork-effect-note
  "The fork rewinds this session to the turn (scope-gated, as a rewind), freezes it, and starts a \
branch session from there; model seeds, the clock and provider versions are not preserved."
  "What a fork does, in words.")

(defun turnback-render-fork-report (report &optional root)
  "The confirmation text of a fork REPORT (`turnback/fork/prepare'), relative to ROOT.
Its files are those of the rewind to the fork's turn, your own edits
among them listed first, as a rewind lists them."
  (let ((files (turnback--list (plist-get report :files))))
    (concat
     (propertize (format "Fork at the response of turn %s" (plist-get report :turn))
                 'face '(:inherit turnback-confirm-heading :height 1.2))
     "\n\n"
     (turnback--fill turnback--fork-effect-note)
     "\n" (turnback--render-files files root)
     "\n" (turnback--render-external files root)
     "\n" (turnback--render-gaps (turnback--list (plist-get report :gaps)) root)
     "\n" (turnback--heading "Effects of the steps after that turn")
     (turnback--render-effects (plist-get report :effects) (plist-get report :stepSummaries))
     (if (plist-get report :summary)
         (concat "\n" (turnback--heading "Summary") (turnback--fill (plist-get report :summary)))
       "")
     "\n" (propertize (concat "y: fork here    "
                              (if (cl-some #'turnback-user-edit-p files)
                                  "k: fork, keeping your edits    " "")
                              "q: cancel")
                      'face 'bold)
     "\n")))

(defun turnback--fork (server turn)
  "Prepare a fork of SERVER's session at TURN and show its confirmation."
  (let ((report (turnback--request server :turnback/fork/prepare (list :turn turn))))
    (if (plist-get report :refusal)
        (progn (message "turnback: cannot fork at turn %s: %s" turn
                        (turnback--get report :refusal :message))
               nil)
      (turnback--confirm server 'fork turn (turnback--annotate server report)))))

;;;###autoload
(defun turnback-fork-at-response ()
  "Fork the session at a response: a branch session continues from there."
  (interactive)
  (let* ((server (turnback-current-server))
         (log (turnback--request server :turnback/session/log))
         (turn (turnback--choose "Fork at the response of: " (turnback-response-choices log))))
    (turnback--fork server turn)))

;;;; The directive panel

(defvar-local turnback--panel-directive nil
  "The id of the directive this panel shows.")

(defvar turnback-directive-panel-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "b" #'turnback-directive-panel-begin)
    (define-key map "e" #'turnback-directive-panel-edit)
    (define-key map "r" #'turnback-directive-panel-rewind)
    (define-key map "g" #'turnback-directive-panel-refresh)
    (define-key map "n" #'turnback--next-item)
    (define-key map "p" #'turnback--previous-item)
    map)
  "Keymap of `turnback-directive-panel-mode'.")

(define-derived-mode turnback-directive-panel-mode special-mode "turnback-directive"
  "One directive: its request, state, attempts and their answers.
\\<turnback-directive-panel-mode-map>\\[turnback-directive-panel-begin] begins an attempt (a
directive turn), \\[turnback-directive-panel-edit] edits the request,
\\[turnback-directive-panel-rewind] rewinds to just before the attempt at point,
\\[turnback-directive-panel-refresh] refreshes."
  (setq truncate-lines nil))

(defun turnback-render-directive-panel (directive &optional root)
  "The panel text of DIRECTIVE, relative to ROOT."
  (let ((attempts (turnback--list (plist-get directive :attempts)))
        (subs (turnback--list (plist-get directive :subdirectives))))
    (concat
     (turnback--heading (format "Directive %s: %s" (plist-get directive :id)
                                (turnback-directive-name (plist-get directive :request))))
     (format "  state:   %s%s\n" (plist-get directive :state)
             (if (turnback-directive-detached-p directive) " (its anchor line changed or disappeared)" ""))
     (format "  anchor:  %s:%s\n" (turnback--display-path (plist-get directive :uri) root)
             (1+ (or (turnback--get directive :anchor :line) 0)))
     "\n" (turnback--heading "Request")
     (mapconcat (lambda (line) (concat "  " line "\n"))
                (split-string (string-trim-right (or (plist-get directive :request) "")) "\n") "")
     "\n" (turnback--heading (if attempts (turnback--plural (length attempts) "attempt") "Attempts"))
     (if (null attempts) "  none yet (b begins one)\n"
       (mapconcat
        (lambda (a)
          (propertize
           (concat (format "  turn %s\n" (plist-get a :turn))
                   (if (plist-get a :answer) (format "    answer:   %s\n" (turnback--one-line (plist-get a :answer) 70)) "")
                   (if (plist-get a :feedback) (format "    feedback: %s\n" (turnback--one-line (plist-get a :feedback) 70)) "")
                   (if (plist-get a :patch) (format "    patch:    %s\n" (turnback--one-line (plist-get a :patch) 70)) ""))
           'turnback-item (plist-get a :turn)))
        attempts ""))
     (if subs
         (concat "\n" (turnback--heading "Subdirectives")
                 (mapconcat (lambda (s) (format "  %s%s\n" (plist-get s :id)
                                                (if (turnback--true-p (plist-get s :consumed)) " (consumed)" "")))
                            subs ""))
       "")
     "\n" (propertize "b: begin an attempt   e: edit the request   r: rewind before the attempt at point   g: refresh"
                      'face 'bold)
     "\n")))

(defun turnback--directive-by-id (server id)
  "The directive ID of SERVER, fetched afresh."
  (or (cl-find id (turnback--list (plist-get (turnback--request server :turnback/directive/list) :directives))
               :key (lambda (d) (plist-get d :id)) :test #'equal)
      (user-error "turnback: there is no directive %s" id)))

;;;###autoload
(defun turnback-directive-panel (&optional directive)
  "Show DIRECTIVE (the one anchored at point, or one chosen) in a side window."
  (interactive)
  (let* ((server (turnback-current-server))
         (directive (or directive (turnback-directive-at-point)
                        (turnback--choose "Directive: "
                                          (turnback-directive-choices
                                           (turnback--list (plist-get (turnback--request server :turnback/directive/list)
                                                                      :directives))
                                           (turnback--root server)))))
         (buffer (get-buffer-create "*turnback-directive*")))
    (with-current-buffer buffer
      (turnback-directive-panel-mode)
      (setq turnback--view-server server
            turnback--panel-directive (plist-get directive :id)
            default-directory (turnback--root server))
      (turnback-directive-panel-refresh))
    (display-buffer-in-side-window buffer '((side . right) (window-width . 0.4)))
    buffer))

(defun turnback-directive-panel-refresh (&optional directive)
  "Redraw the panel (with DIRECTIVE when given, else fetched afresh)."
  (interactive)
  (let ((d (or directive (turnback--directive-by-id turnback--view-server turnback--panel-directive)))
        (inhibit-read-only t)
        (pos (point)))
    (erase-buffer)
    (insert (turnback-render-directive-panel d (turnback--root turnback--view-server)))
    (goto-char (min pos (point-max)))
    d))

(defun turnback--refresh-panels (server directives)
  "Redraw a panel of SERVER showing one of DIRECTIVES (a directive notification)."
  (when-let ((buffer (get-buffer "*turnback-directive*")))
    (with-current-buffer buffer
      (when (eq turnback--view-server server)
        (when-let ((d (cl-find turnback--panel-directive (turnback--list directives)
                               :key (lambda (x) (plist-get x :id)) :test #'equal)))
          (turnback-directive-panel-refresh d))))))

(defun turnback-directive-panel-begin (prompt)
  "Begin an attempt at the panel's directive: a directive turn with PROMPT."
  (interactive
   (let ((d (turnback--directive-by-id turnback--view-server turnback--panel-directive)))
     (list (read-string (format-prompt "Prompt" (turnback-directive-name (plist-get d :request)))
                        nil nil (plist-get d :request)))))
  (let ((turn (turnback-turn-begin prompt turnback--panel-directive)))
    (turnback-directive-panel-refresh)
    turn))

(defun turnback-directive-panel-edit (request)
  "Replace the request of the panel's directive with REQUEST."
  (interactive
   (let ((d (turnback--directive-by-id turnback--view-server turnback--panel-directive)))
     (list (read-string "Request: " (plist-get d :request)))))
  (let* ((d (turnback--directive-by-id turnback--view-server turnback--panel-directive))
         (new (turnback--request turnback--view-server :turnback/directive/upsert
                                 (list :id (plist-get d :id) :uri (plist-get d :uri)
                                       :anchor (list :line (or (turnback--get d :anchor :line) 0)
                                                     :character (or (turnback--get d :anchor :character) 0))
                                       :request request))))
    (turnback-directive-panel-refresh)
    (message "turnback: directive %s now asks “%s”" (plist-get d :id) (turnback-directive-name request))
    new))

(defun turnback-directive-panel-rewind ()
  "Rewind to just before the attempt at point (its newest one elsewhere)."
  (interactive)
  (let* ((d (turnback--directive-by-id turnback--view-server turnback--panel-directive))
         (turn (or (get-text-property (point) 'turnback-item)
                   (plist-get (car (last (turnback--list (plist-get d :attempts)))) :turn)
                   (user-error "turnback: directive %s has no attempt to rewind before" (plist-get d :id)))))
    (turnback--rewind turnback--view-server
                      (list :kind "beforeDirectiveAttempt" :directiveId (plist-get d :id) :turn turn))))

(provide 'turnback)
;;; turnback.el ends here
