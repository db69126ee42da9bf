;;; turnback-views.el --- turnback.el: the session, recovery and lineage views  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The turnback authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The views of the Emacs client of turnback: the session view (the
;; equivalent of `turnback log'), the recovery records.  Part of turnback.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'turnback)


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

(defvar-local turnback--view-session nil
  "The session this view shows.
nil for the live one, else a session id (shown read only).")

(defvar turnback-session-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "r" #'turnback-session-rewind-at-response)
    (define-key map "b" #'turnback-session-rewind-before-prompt)
    (define-key map "f" #'turnback-session-fork)
    (define-key map "R" #'turnback-session-redo)
    (define-key map "D" #'turnback-session-directive)
    (define-key map "L" #'turnback-lineage)
    (define-key map "g" #'turnback-session-refresh)
    (define-key map (kbd "RET") #'turnback-diff-at-point)
    (define-key map "=" #'turnback-diff-at-point)
    (define-key map "e" #'turnback-ediff-at-point)
    (define-key map "n" #'turnback--next-item)
    (define-key map "p" #'turnback--previous-item)
    map)
  "Keymap of `turnback-session-mode'.")

(define-derived-mode turnback-session-mode special-mode "turnback-session"
  "The turns of a turnback session, with actions on the turn at point.
\\<turnback-session-mode-map>\\[turnback-session-rewind-at-response] rewinds to just after its
response, \\[turnback-session-rewind-before-prompt] to just before its prompt,
\\[turnback-session-fork] forks at its response, \\[turnback-session-redo] offers Redo,
\\[turnback-session-directive] shows its directive, \\[turnback-lineage] the sessions of the store.
On a file, \\[turnback-diff-at-point] shows what the turn (or your own edit between turns) changed
in a diff-mode buffer, \\[turnback-ediff-at-point] compares the two sides with ediff.
\\[turnback-session-refresh] refreshes (the view also refreshes itself after every change),
\\[turnback--next-item] and \\[turnback--previous-item] move between turns."
  (setq truncate-lines t))

(defconst turnback--file-words
  '(("created" . "created") ("deleted" . "deleted") ("modified" . "changed")
    ("mode" . "permission bits changed") ("transient" . "created and removed in this turn")
    ("unknown-before" . "changed (turnback never saw it before)") ("gap" . "not captured"))
  "A change's status (`turnback/diff'), in words.")

(defun turnback--file-status (file)
  "The status of a session log FILE entry, as `turnback/diff' names it."
  (let ((before (plist-get file :before)) (after (plist-get file :after)))
    (cond ((and (equal before "absent") (equal after "absent")) "transient")
          ((equal before "unknown") "unknown-before")
          ((equal before "absent") "created")
          ((equal after "absent") "deleted")
          ((equal before after) "mode")
          (t "modified"))))

(defun turnback--step-words (step)
  "What STEP (a session log step) did, in words: the command of a shell step."
  (let ((summary (replace-regexp-in-string "[ \t]*\\[scope [a-z]+: .*\\][ \t]*\\'" ""
                                           (or (plist-get step :summary) ""))))
    (if (equal (plist-get step :kind) "shell")
        (let ((command (if (string-match "\\`[A-Za-z_][A-Za-z0-9_.-]*: \\(.+\\)\\'" summary)
                           (match-string 1 summary) summary)))
          (if (string-empty-p command) "ran a shell command (not recorded)"
            (format "ran “%s”" command)))
      (if (string-empty-p summary) (plist-get step :kind) summary))))

(defun turnback-session-name (log)
  "A session named by its first prompt (LOG is its `turnback/session/log')."
  (let ((first (car (turnback--list (plist-get log :turns)))))
    (if first (format "“%s”" (turnback--one-line (plist-get first :prompt) 50)) "(no turn yet)")))

(defun turnback-render-session (log info root &optional edits)
  "The session view text of LOG and INFO, relative to ROOT.
LOG is `turnback/session/log', INFO `turnback/session/info' (nil for
a session other than the live one).  EDITS are the user's own changes
between turns (`turnback/diff' changes of source user), shown after
the turn they followed."
  (let* ((turns (turnback--list (plist-get log :turns)))
         (gaps (or (plist-get info :liveGaps) 0))
         (recovery (or (plist-get info :recovery) 0)))
    (concat
     (turnback--heading (format "turnback session %s" (turnback-session-name log)))
     (if info
         (format "  %s store · %s · %s%s%s\n"
                 (or (plist-get info :storeKind) "?") (turnback--plural (length turns) "turn")
                 (or (plist-get info :ownership) "?")
                 (if (> gaps 0) (format " · %s" (turnback--plural gaps "live gap")) "")
                 (if (> recovery 0) (format " · %s (M-x turnback-recovery)"
                                            (turnback--plural recovery "recovery record"))
                   ""))
       (format "  %s · %s (read only)\n" (turnback--plural (length turns) "turn")
               (if (turnback--true-p (plist-get log :frozen)) "frozen: it was forked" "not the live session")))
     "  r: rewind after this response   b: rewind before this prompt   f: fork here\n"
     "  RET or =: the diff of the file at point   e: ediff it   R: redo…   L: sessions\n"
     "  D: this turn's directive   g: refresh   n/p: next/previous turn\n\n"
     (if (null turns) "  No turns yet: they appear here when your agent (or M-x turnback-turn-begin) starts one.\n"
       (concat
        (turnback--render-user-edits edits 0 root)
        (mapconcat (lambda (turn)
                     (concat (propertize (turnback--render-turn turn root)
                                         'turnback-item (plist-get turn :turn))
                             (turnback--render-user-edits edits (plist-get turn :turn) root)))
                   turns "\n"))))))

(defun turnback--change-line (text change)
  "TEXT, a line about one file, carrying CHANGE for the diff commands."
  (propertize text 'turnback-change change 'mouse-face 'highlight
              'help-echo "RET or =: the diff; e: ediff"))

(defun turnback--render-user-edits (edits after root)
  "The user's own EDITS made after turn AFTER (0: before turn 1).
Paths are relative to ROOT."
  (let ((mine (cl-remove-if-not (lambda (c) (equal (plist-get c :afterTurn) after)) edits)))
    (if (null mine) ""
      (concat (propertize (format "  your own edits %s:\n"
                                  (if (zerop after) "before turn 1"
                                    (format "after turn %s, before turn %s" after (1+ after))))
                          'face 'turnback-confirm-warning)
              (mapconcat
               (lambda (c)
                 (turnback--change-line
                  (format "    %s  %s (%s)\n" (turnback--display-path (plist-get c :uri) root)
                          (or (cdr (assoc (plist-get c :status) turnback--file-words)) (plist-get c :status))
                          (pcase (plist-get c :by)
                            ("save" "saved in the editor") ((or "watch" "sweep") "changed on disk")
                            ("hook" "captured between turns") ("restore" "put back by a restore")
                            ("kept" "kept by a conversation-only rewind") (_ "made by no turn")))
                  (list :source "user" :turn after :uri (plist-get c :uri))))
               mine "")))))

(defun turnback--folder-key-p (entry)
  "Non-nil when ENTRY of a turn's files names a folder.
Its URI ends with a slash."
  (string-suffix-p "/" (or (plist-get entry :uri) (plist-get entry :path) "")))

(defun turnback--render-turn (turn root)
  "The lines of one TURN of a session log, relative to ROOT."
  (let* ((entries (turnback--list (plist-get turn :files)))
         ;; a folder the turn made or removed is a key of its own (`pkg/'), not a file: listed on
         ;; a line of its own, with no diff (it has no text; the files in it say what changed)
         (folders (sort (cl-remove-if-not #'turnback--folder-key-p entries)
                        ;; in path order, as the files are (the server lists folders as walked)
                        (lambda (a b) (string< (or (plist-get a :uri) "") (or (plist-get b :uri) "")))))
         (files (cl-remove-if #'turnback--folder-key-p entries))
         (steps (turnback--list (plist-get turn :stepList)))
         (gaps (turnback--list (plist-get turn :gaps))))
    (concat
     (propertize (format "Turn %s · %s · %s\n" (plist-get turn :turn)
                         (if (equal (plist-get turn :kind) "directive") "directive" "chat")
                         (plist-get turn :state))
                 'face 'turnback-confirm-heading)
     (format "  prompt:  %s\n" (turnback--one-line (plist-get turn :prompt) 70))
     (if (and (plist-get turn :response) (not (string-empty-p (plist-get turn :response))))
         (format "  answer:  %s\n" (turnback--one-line (plist-get turn :response) 70))
       "")
     (if files
         (concat "  files:\n"
                 (mapconcat
                  (lambda (f)
                    (turnback--change-line
                     (format "    %s  %s\n" (turnback--display-path (plist-get f :uri) root)
                             (cdr (assoc (turnback--file-status f) turnback--file-words)))
                     (list :source "turn" :turn (plist-get turn :turn) :uri (plist-get f :uri))))
                  files ""))
       "")
     (if folders
         (format "  folders: %s\n"
                 (mapconcat (lambda (f) (format "%s (%s)" (turnback--display-path (plist-get f :uri) root)
                                                (cdr (assoc (turnback--file-status f) turnback--file-words))))
                            folders ", "))
       "")
     (if steps
         (concat "  steps:\n"
                 (mapconcat (lambda (s)
                              (format "    %s  (scope %s)\n" (turnback--one-line (turnback--step-words s) 70)
                                      (or (plist-get s :scope) "not given")))
                            steps ""))
       "")
     (if gaps
         (concat (format "  %s:\n" (turnback--plural (length gaps) "gap"))
                 (mapconcat (lambda (g) (turnback--warn (concat "    " (turnback-format-gap g root) "\n")))
                            gaps ""))
       ""))))

;;;###autoload
(defun turnback-session (&optional session-id)
  "Show the session (with SESSION-ID: another session of the store, read only).
Its turns, prompts, states, files, steps, gaps and your own edits
between turns; rewind, fork and redo act on the turn at point, the diff
commands on the file at point.  The view refreshes itself after every
change the sidecar announces."
  (interactive)
  (let ((server (turnback-current-server)))
    (with-current-buffer (get-buffer-create (if session-id (format "*turnback-session %s*" session-id)
                                              "*turnback-session*"))
      (turnback-session-mode)
      (setq turnback--view-server server
            turnback--view-session session-id)
      (setq default-directory (turnback--root server))
      (turnback-session-refresh)
      (pop-to-buffer (current-buffer)))))

(defun turnback--session-params ()
  "The params naming this view's session (none for the live one)."
  (when turnback--view-session (list :sessionId turnback--view-session)))

(defun turnback-session-refresh ()
  "Fetch the session log again and redraw, keeping point on the same turn."
  (interactive)
  (let* ((server turnback--view-server)
         (params (turnback--session-params))
         (log (turnback--request server :turnback/session/log params))
         (info (unless turnback--view-session (turnback--request server :turnback/session/info)))
         (diff (when (turnback--list (plist-get log :turns))
                 (ignore-errors (turnback--request server :turnback/diff (turnback--edits-params params))))))
    (turnback--session-draw log info diff)))

(defun turnback--edits-params (params)
  "The params of the `diff' that lists the user's own edits (PARAMS: the session)."
  (append (list :since 1 :text :json-false) params))

(defun turnback--session-draw (log info diff)
  "Redraw this session view from LOG, INFO and DIFF.
Point stays on the same turn."
  (let* ((server turnback--view-server)
         (turn (get-text-property (point) 'turnback-item))
         (edits (when (turnback--list (plist-get log :turns))
                  (cl-remove-if-not (lambda (c) (equal (plist-get c :source) "user"))
                                    (turnback--list (plist-get diff :changes)))))
         (inhibit-read-only t))
    (erase-buffer)
    (insert (turnback-render-session log info (turnback--root server) edits))
    (goto-char (point-min))
    (let ((pos (and turn (text-property-any (point-min) (point-max) 'turnback-item turn))))
      (if pos (goto-char pos) (turnback--next-item)))))

(defun turnback--session-refresh-async (buffer)
  "Fetch what the session view BUFFER shows; redraw it when it comes.
Never waits."
  (let* ((server (buffer-local-value 'turnback--view-server buffer))
         (params (with-current-buffer buffer (turnback--session-params)))
         (live (not (buffer-local-value 'turnback--view-session buffer))))
    (turnback--fetch server (list (list :turnback/session/log params)
                                  (list :turnback/session/info nil)
                                  (list :turnback/diff (turnback--edits-params params)))
                     (lambda (log info diff)
                       (when (and log (buffer-live-p buffer))
                         (with-current-buffer buffer
                           (when (eq turnback--view-server server)
                             (turnback--session-draw log (and live info) diff))))))))

(defun turnback--after-change (server)
  "Refresh every session and lineage view of SERVER, soon and once.
Called on every notification that says the session changed (a commit,
a rewound, a status change) and after this client's own commits.  The
refresh is asynchronous: it sends its requests and redraws when they
are answered, so it never waits inside a timer (a commit's request may
be waiting meanwhile); `turnback-stop' cancels it."
  (unless (alist-get server turnback--refresh-timers)
    (setf (alist-get server turnback--refresh-timers)
          (run-at-time 0.1 nil
                       (lambda ()
                         (setf (alist-get server turnback--refresh-timers nil 'remove) nil)
                         (when (turnback--live-p server)
                           (dolist (buffer (buffer-list))
                             (when (eq (buffer-local-value 'turnback--view-server buffer) server)
                               (pcase (buffer-local-value 'major-mode buffer)
                                 ('turnback-lineage-mode (turnback--lineage-refresh-async buffer))
                                 ('turnback-session-mode (turnback--session-refresh-async buffer)))))))))))

(defun turnback--turn-at-point ()
  "The turn number at point in the session view."
  (or (get-text-property (point) 'turnback-item)
      (get-text-property (point) 'turnback-change)
      (user-error "turnback: no turn at point")))

(defun turnback--live-view ()
  "Refuse an action that changes the session from a view of another session."
  (when turnback--view-session
    (user-error "turnback: this view shows session %s, which is not the live one: it can be read, not changed"
                turnback--view-session)))

(defun turnback-session-rewind-at-response ()
  "Rewind to just after the response of the turn at point."
  (interactive)
  (turnback--live-view)
  (turnback--rewind turnback--view-server (list :kind "afterResponse" :turn (turnback--turn-number))))

(defun turnback-session-rewind-before-prompt ()
  "Rewind to just before the prompt of the turn at point."
  (interactive)
  (turnback--live-view)
  (turnback--rewind turnback--view-server (list :kind "beforePrompt" :turn (turnback--turn-number))))

(defun turnback--turn-number ()
  "The number of the turn at point (a file line belongs to its turn)."
  (let ((item (turnback--turn-at-point)))
    (if (numberp item) item (plist-get item :turn))))

(defun turnback-session-fork ()
  "Fork the session at the response of the turn at point."
  (interactive)
  (turnback--live-view)
  (turnback--fork turnback--view-server (turnback--turn-number)))

(defun turnback-session-redo ()
  "Offer Redo (from the session view)."
  (interactive)
  (turnback--live-view)
  (let ((default-directory (turnback--root turnback--view-server)))
    (turnback-redo)))

(defun turnback-session-directive ()
  "Show the directive the turn at point attempted."
  (interactive)
  (let* ((n (turnback--turn-number))
         (turn (cl-find n (turnback--list (plist-get (turnback--request turnback--view-server
                                                                        :turnback/session/log
                                                                        (turnback--session-params))
                                                     :turns))
                        :key (lambda (x) (plist-get x :turn))))
         (id (plist-get turn :directiveId)))
    (unless id (user-error "turnback: turn %s is not a directive turn" n))
    (turnback-directive-panel (turnback--directive-by-id turnback--view-server id))))

;;;; The lineage view: the sessions of the store

(defvar turnback-lineage-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'turnback-lineage-open)
    (define-key map "g" #'turnback-lineage-refresh)
    (define-key map "n" #'turnback--next-item)
    (define-key map "p" #'turnback--previous-item)
    map)
  "Keymap of `turnback-lineage-mode'.")

(define-derived-mode turnback-lineage-mode special-mode "turnback-lineage"
  "The sessions of a turnback store: parents before their branches.
\\<turnback-lineage-mode-map>\\[turnback-lineage-open] opens the session at point (a frozen
parent is read only), \\[turnback-lineage-refresh] refreshes."
  (setq truncate-lines t))

(defun turnback-render-lineage (sessions names)
  "The lineage text of SESSIONS (`turnback/session/list').
NAMES maps a session id to a name."
  (let* ((ids (mapcar (lambda (x) (plist-get x :sessionId)) sessions))
         (roots (cl-remove-if (lambda (x) (member (plist-get x :parentId) ids)) sessions)))
    (cl-labels ((line (x depth)
                  (concat
                   (propertize
                    (format "%s%s %s · %s%s%s%s\n"
                            (make-string (* 2 depth) ?\s)
                            (cond ((turnback--true-p (plist-get x :current)) "●")
                                  ((turnback--true-p (plist-get x :frozen)) "■")
                                  (t "○"))
                            (or (cdr (assoc (plist-get x :sessionId) names)) (plist-get x :sessionId))
                            (turnback--plural (or (plist-get x :turnCount) 0) "turn")
                            (if (plist-get x :forkTurn) (format " · forked at turn %s" (plist-get x :forkTurn)) "")
                            (cond ((turnback--true-p (plist-get x :current)) " · this session")
                                  ((turnback--true-p (plist-get x :frozen)) " · frozen (read only)")
                                  (t ""))
                            (if (plist-get x :worktree)
                                (format " · in %s" (abbreviate-file-name (plist-get x :worktree))) ""))
                    'turnback-item (plist-get x :sessionId))
                   (mapconcat (lambda (c) (line c (1+ depth)))
                              (cl-remove-if-not (lambda (c) (equal (plist-get c :parentId)
                                                                   (plist-get x :sessionId)))
                                                sessions)
                              ""))))
      (concat (turnback--heading "Sessions of this workspace")
              "  ● this session   ■ frozen (forked)   ○ another session\n"
              "  RET: open the session at point   g: refresh\n\n"
              (mapconcat (lambda (x) (line x 1)) roots "")))))

;;;###autoload
(defun turnback-lineage ()
  "Show the sessions of the store.
Each fork, its frozen parent and worktree forks."
  (interactive)
  (let ((server (if (derived-mode-p 'turnback-session-mode) turnback--view-server
                  (turnback-current-server))))
    (with-current-buffer (get-buffer-create "*turnback-lineage*")
      (turnback-lineage-mode)
      (setq turnback--view-server server
            default-directory (turnback--root server))
      (turnback-lineage-refresh)
      (pop-to-buffer (current-buffer)))))

(defun turnback-lineage-refresh ()
  "Fetch the sessions again and redraw."
  (interactive)
  (let* ((server turnback--view-server)
         (sessions (turnback--list (plist-get (turnback--request server :turnback/session/list) :sessions))))
    (turnback--lineage-draw sessions
                            (mapcar (lambda (x)
                                      (ignore-errors
                                        (turnback--request server :turnback/session/log
                                                           (turnback--lineage-log-params x))))
                                    sessions))))

(defun turnback--lineage-log-params (session)
  "The params of the `session/log' of SESSION (an entry of `session/list')."
  (unless (turnback--true-p (plist-get session :current))
    (list :sessionId (plist-get session :sessionId))))

(defun turnback--lineage-draw (sessions logs)
  "Redraw this lineage view from SESSIONS and their LOGS (nil for one not read)."
  (let ((names (cl-mapcar (lambda (x log)
                            (cons (plist-get x :sessionId)
                                  (if log (turnback-session-name log) (plist-get x :sessionId))))
                          sessions logs))
        (pos (point))
        (inhibit-read-only t))
    (erase-buffer)
    (insert (turnback-render-lineage sessions names))
    (goto-char (min pos (point-max)))))

(defun turnback--lineage-refresh-async (buffer)
  "Fetch what the lineage view BUFFER shows; redraw it when it comes.
Never waits."
  (let ((server (buffer-local-value 'turnback--view-server buffer)))
    (turnback--async
     server :turnback/session/list nil
     (lambda (result)
       (let ((sessions (turnback--list (plist-get result :sessions))))
         (turnback--fetch server (mapcar (lambda (x) (list :turnback/session/log (turnback--lineage-log-params x)))
                                         sessions)
                          (lambda (&rest logs)
                            (when (buffer-live-p buffer)
                              (with-current-buffer buffer
                                (when (eq turnback--view-server server)
                                  (turnback--lineage-draw sessions logs)))))))))))

(defun turnback-lineage-open ()
  "Open the session at point: the live one, or another one read only."
  (interactive)
  (let* ((id (or (get-text-property (point) 'turnback-item) (user-error "turnback: no session at point")))
         (server turnback--view-server)
         (live (equal id (plist-get (turnback--request server :turnback/session/info) :sessionId))))
    (let ((default-directory (turnback--root server)))
      (turnback-session (unless live id)))))

(provide 'turnback-views)
;;; turnback-views.el ends here
