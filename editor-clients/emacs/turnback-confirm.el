;;; turnback-confirm.el --- turnback.el: rewind, redo, fork and restore, and their confirmation  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The turnback authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The commands that change the session (rewind, redo, fork, restore) and the
;; *turnback-confirm* buffer that shows their plan before anything changes.
;; Part of turnback.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'turnback)


;;;; Commands

(defun turnback--dirty-uris (server)
  "The files of SERVER's workspace that have unsaved changes in a buffer, as URIs.
A rewind or restore that would write one of them is refused before
anything is written (`dirty' in the contract)."
  (let ((root (turnback--root server)) out)
    (dolist (buffer (buffer-list))
      (let ((file (buffer-file-name buffer)))
        (when (and file (buffer-modified-p buffer) (file-in-directory-p file root))
          (push (turnback--path-to-uri file) out))))
    (vconcat (nreverse out))))

(defun turnback--mode-params (mode)
  "The `mode' param of a rewind in MODE (nil or \"all\" sends none)."
  (when (and mode (not (equal mode "all"))) (list :mode mode)))

(defun turnback--rewind (server boundary &optional mode)
  "Prepare the rewind of SERVER to BOUNDARY (in MODE) and show its confirmation.
MODE is \"all\" (the default), \"files\" (the files only) or
\"conversation\" (the conversation only).  A boundary equal to the
current state shows nothing: there is nothing to rewind."
  (let ((candidate (turnback--request server :turnback/rewind/prepare
                                      (append (list :boundary boundary :dirty (turnback--dirty-uris server))
                                              (turnback--mode-params mode)))))
    (if (turnback--true-p (plist-get candidate :noop))
        (progn (message "turnback: nothing to rewind: %s"
                        (if (equal mode "files") "every file already is as it was there"
                          (format "turn %s is the current state" (turnback--get candidate :keep :turnCount))))
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

;;;; The confirmation buffer

(defvar-local turnback--confirm-state nil
  "Plist (:server :kind :target :plan) of the confirmation shown in this buffer.")

(defvar turnback-confirm-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "y" #'turnback-confirm-commit)
    (define-key map "k" #'turnback-confirm-commit-keeping-edits)
    (define-key map "m" #'turnback-confirm-commit-with-markers)
    (define-key map "a" #'turnback-confirm-mode-all)
    (define-key map "f" #'turnback-confirm-mode-files)
    (define-key map "c" #'turnback-confirm-mode-conversation)
    (define-key map "w" #'turnback-confirm-fork-into-worktree)
    (define-key map "q" #'turnback-confirm-cancel)
    (define-key map "n" #'turnback-confirm-cancel)
    map)
  "Keymap of `turnback-confirm-mode'.")

(define-derived-mode turnback-confirm-mode special-mode "turnback-confirm"
  "The confirmation of a turnback rewind, redo, fork or restore.
\\<turnback-confirm-mode-map>\\[turnback-confirm-commit] commits, \
\\[turnback-confirm-commit-keeping-edits] commits and keeps your own edits (merged onto
the restored files where they merge cleanly, left as they are otherwise),
\\[turnback-confirm-commit-with-markers] keeps them with conflict markers where they conflict,
\\[turnback-confirm-cancel] cancels.  In a rewind, \\[turnback-confirm-mode-files] shows it for the
files only, \\[turnback-confirm-mode-conversation] for the conversation only, \\[turnback-confirm-mode-all] for both;
in a fork, \\[turnback-confirm-fork-into-worktree] forks into a new folder instead."
  (setq truncate-lines nil))

(defun turnback--render (kind plan root)
  "The confirmation text of PLAN for KIND, relative to ROOT.
KIND is `rewind', `redo', `fork' or `restore'."
  (pcase kind
    ('redo (turnback-render-redo-plan plan root))
    ('fork (turnback-render-fork-report plan root))
    ('restore (turnback-render-candidate plan root (turnback-restore-title plan root)))
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
  "Commit the plan shown, keeping every file listed as your own edit.
A rewind merges each onto the restored file where the merge is clean and
leaves the others (a conflict, a binary file) as they are now."
  (interactive)
  (turnback-confirm-commit t))

(defun turnback-confirm-commit-with-markers ()
  "Commit the plan shown, keeping your edits.
A file where they conflict gets conflict markers."
  (interactive)
  (turnback-confirm-commit 'markers))

(defun turnback--confirm-state-or-error ()
  "The state of the confirmation shown, or a `user-error'."
  (let ((buffer (get-buffer "*turnback-confirm*")))
    (or (and buffer (buffer-local-value 'turnback--confirm-state buffer))
        (user-error "turnback: there is no plan shown"))))

(defun turnback--confirm-in-mode (mode)
  "Show the rewind of the confirmation in MODE instead."
  (let ((state (turnback--confirm-state-or-error)))
    (unless (eq (plist-get state :kind) 'rewind)
      (user-error "turnback: only a rewind has modes (files only, conversation only)"))
    (turnback--rewind (plist-get state :server) (plist-get state :target) mode)))

(defun turnback-confirm-mode-all ()
  "Show this rewind for the files and the conversation together."
  (interactive)
  (turnback--confirm-in-mode "all"))

(defun turnback-confirm-mode-files ()
  "Show this rewind for the files only: every turn of the conversation stays."
  (interactive)
  (turnback--confirm-in-mode "files"))

(defun turnback-confirm-mode-conversation ()
  "Show this rewind for the conversation only: every file stays as it is now."
  (interactive)
  (turnback--confirm-in-mode "conversation"))

(defun turnback-confirm-fork-into-worktree (folder)
  "Fork into FOLDER (a new folder, or a git worktree) and leave this one as it is."
  (interactive
   (let ((state (turnback--confirm-state-or-error)))
     (unless (eq (plist-get state :kind) 'fork)
       (user-error "turnback: only a fork goes into a worktree"))
     (list (read-directory-name
            "Fork into a new folder: " nil nil nil
            (format "%s-fork-%s" (directory-file-name (turnback--root (plist-get state :server)))
                    (plist-get state :target))))))
  (turnback-confirm-commit nil (expand-file-name folder)))

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

(defun turnback--commit-request (server kind target plan keep &optional worktree)
  "Send the commit of PLAN of KIND for TARGET to SERVER.
With KEEP, the user's edits are kept (KEEP `markers': with conflict
markers where they conflict).  A fork with WORKTREE goes into that folder."
  (let ((keep (append (when keep (list :keepUserEdits t))
                      (when (eq keep 'markers) (list :conflictMarkers t))))
        (hash (list :planHash (plist-get plan :planHash))))
    (pcase kind
      ('rewind (turnback--request server :turnback/rewind/commit
                                  (append (list :boundary target :dirty (turnback--dirty-uris server))
                                          hash (turnback--mode-params (plist-get plan :mode)) keep)))
      ('restore (turnback--request server :turnback/restore/commit
                                   (append (list :paths (plist-get target :paths)
                                                 :boundary (plist-get target :boundary)
                                                 :dirty (turnback--dirty-uris server))
                                           hash keep)))
      ('redo (turnback--request server :turnback/redo/commit
                                (append (list :headSeq target) hash keep)))
      ('fork (turnback--request server :turnback/fork/confirm
                                (append (list :turn target :planHash (plist-get plan :hash)
                                              ;; and its old name, for a server before planHash
                                              :hash (plist-get plan :hash))
                                        (if worktree (list :worktree worktree) keep)))))))

(defun turnback--prepare-again (server kind target &optional plan)
  "A fresh plan of KIND for TARGET from SERVER (PLAN: the stale one)."
  (pcase kind
    ('rewind (turnback--annotate server (turnback--request
                                         server :turnback/rewind/prepare
                                         (append (list :boundary target :dirty (turnback--dirty-uris server))
                                                 (turnback--mode-params (plist-get plan :mode))))))
    ('restore (turnback--annotate server (turnback--request
                                          server :turnback/restore/prepare
                                          (append target (list :dirty (turnback--dirty-uris server))))))
    ('redo (turnback--request server :turnback/redo/prepare (list :headSeq target)))
    ('fork (turnback--request server :turnback/fork/prepare (list :turn target)))))

(defun turnback--kept-words (result root)
  "What keeping the user's edits did, from a commit RESULT, in words (or nil)."
  (let* ((paths (lambda (key) (mapconcat (lambda (u) (turnback--display-path u root))
                                         (turnback--list (plist-get result key)) ", ")))
         (conflicts (turnback--list (plist-get result :conflicts)))
         (kept (cl-remove-if (lambda (u) (member u conflicts)) (turnback--list (plist-get result :kept))))
         (words (delq nil
                      (list (when (turnback--list (plist-get result :merged))
                              (format "merged your edits onto %s" (funcall paths :merged)))
                            (when (turnback--list (plist-get result :conflictMarkers))
                              (format "wrote conflict markers into %s" (funcall paths :conflictMarkers)))
                            (when conflicts
                              (format "left %s as it is (a conflict: resolve it by hand)"
                                      (funcall paths :conflicts)))
                            (when kept
                              (format "kept your edits to %s"
                                      (mapconcat (lambda (u) (turnback--display-path u root)) kept ", ")))))))
    (when words (string-join words "; "))))

(defun turnback-confirm-commit (&optional keep-user-edits worktree)
  "Commit the plan shown in *turnback-confirm*.
With KEEP-USER-EDITS, the files listed as your own edits keep them
\(`markers': with conflict markers where they conflict).  A fork with
WORKTREE goes into that folder.  When the session changed since the
plan was made, show the fresh plan instead.  One message says the
outcome; warnings about buffers with unsaved changes follow it.
Return the result."
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
        (let* ((result (turnback--commit-request server kind target plan keep-user-edits worktree))
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
               (turnback--after-change server)
               (message "%s" (string-join
                              (delq nil
                                    (list (cond
                                           ((and (equal status "forked") worktree)
                                            (format "turnback: forked at turn %s into %s: the new session is %s; this folder stays as it is"
                                                    target (abbreviate-file-name
                                                            (or (turnback--get result :branch :worktree) worktree))
                                                    (turnback--get result :branch :sessionId)))
                                           ((equal status "forked")
                                            (format "turnback: forked at turn %s: the new session is %s; %s is frozen"
                                                    target (turnback--get result :branch :sessionId)
                                                    (turnback--get result :branch :parentId)))
                                           (t (format "turnback: %s committed" what)))
                                          (turnback--kept-words result root)
                                          (when warnings (string-join warnings "; "))
                                          (turnback--agent-resume-note result)))
                              "; "))))
            ("nothing-to-do"
             (turnback--close-confirm)
             (message "turnback: nothing to %s: this is the current state" what))
            ("stale"
             (let ((fresh (or (plist-get result :candidate) (plist-get result :plan)
                              (plist-get result :report)
                              (turnback--prepare-again server kind target plan))))
               (turnback--confirm server kind target
                                  (if (memq kind '(rewind restore)) (turnback--annotate server fresh) fresh)
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

;;;; Fork at this response

(defconst turnback--fork-effect-note
  "The fork rewinds this session to the turn (scope-gated, as a rewind), freezes it, and starts a \
branch session from there; model seeds, the clock and provider versions are not preserved."
  "What a fork does, in words.")

(defun turnback-render-fork-report (report &optional root)
  "The confirmation text of a fork REPORT (`turnback/fork/prepare').
Paths are relative to ROOT.  Its files are those of the rewind to
the fork's turn, your own edits among them listed first, as a rewind
lists them."
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
     (turnback--render-effects (plist-get report :effects) (plist-get report :stepSummaries)
                               (plist-get report :steps) (plist-get report :effectWords))
     (if (plist-get report :summary)
         (concat "\n" (turnback--heading "Summary") (turnback--fill (plist-get report :summary)))
       "")
     "\n" (propertize (concat "y: fork here    "
                              (if (cl-some #'turnback-user-edit-p files)
                                  "k: fork, keeping your edits    " "")
                              "w: fork into a new folder (this one stays)    "
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

;;;; Restore one file to a turn

(defun turnback--nothing-restored (candidate name root)
  "Why the restore CANDIDATE of NAME (relative to ROOT) changes nothing.
Every file already is as it was, or gaps stand in the way (a folder
where the file was, a file where its folder was: docs/rewind.md,
\"Restore\"): then the server's summary, which names each gap in its
words; an older server's gaps in their own lines."
  (let ((gaps (turnback--list (plist-get candidate :gaps)))
        (summary (plist-get candidate :summary)))
    (cond ((null gaps) (format "nothing to restore: %s already is as it was then" name))
          ((and (stringp summary) (string-prefix-p "Nothing restored" summary)) summary)
          (t (format "nothing restored: %s"
                     (mapconcat (lambda (g) (turnback-format-gap g root)) gaps "; "))))))

;;;###autoload
(defun turnback-restore-file (file)
  "Restore FILE to how it was at a turn; the conversation and the other files stay.
FILE is the current buffer's (in Dired, the file at point; a folder
restores the files it held).  The turns that changed it are offered,
newest first: as it was after each, or before it.  The plan is shown
first; Redo can undo the restore."
  (interactive
   (list (or (and (derived-mode-p 'dired-mode) (fboundp 'dired-get-filename)
                  (dired-get-filename nil t))
             buffer-file-name
             (read-file-name "Restore file: "))))
  (let* ((file (expand-file-name file))
         (server (or (turnback--server-for file) (turnback-current-server)))
         (uri (turnback--path-to-uri (directory-file-name file)))
         (choices (turnback-restore-choices (turnback--request server :turnback/session/log) uri
                                            (file-directory-p file)))
         (name (turnback--display-path uri (turnback--root server))))
    (unless choices (user-error "turnback: no turn changed %s: there is nothing to restore it to" name))
    (let* ((boundary (turnback--choose (format "Restore %s to: " name) choices))
           (target (list :paths (vector uri) :boundary boundary))
           (candidate (turnback--request server :turnback/restore/prepare
                                         (append target (list :dirty (turnback--dirty-uris server))))))
      (if (turnback--true-p (plist-get candidate :noop))
          (progn (message "turnback: %s"
                          (turnback--nothing-restored candidate name (turnback--root server)))
                 nil)
        (turnback--confirm server 'restore target (turnback--annotate server candidate))))))

(provide 'turnback-confirm)
;;; turnback-confirm.el ends here
