;;; turnback-render.el --- turnback.el: pure rendering, data in and text out  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The turnback authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The small helpers and every pure rendering of the Emacs client of turnback:
;; candidates, plans, effects in words, gaps, choices.  No server, no buffers.
;; Part of turnback.el (the package's main file requires it).

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'url-util)
(require 'url-parse)


(defvar turnback-initialization-options)
(defvar turnback-store-kind)
(defvar turnback-store-path)
(defvar turnback-capture-max-file-bytes)
(defvar turnback-capture-sweep)
(defvar turnback-collect-grace-heads)

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
  "One line describing GAP, relative to ROOT.
GAP is a plist :uri :turn :reason :words :detail; the reason's words
are the server's (an older server sends none)."
  (let ((detail (plist-get gap :detail))
        (words (plist-get gap :words))
        (turn (plist-get gap :turn)))
    (concat (turnback--display-path (plist-get gap :uri) root)
            ": " (or (plist-get gap :reason) "unknown")
            (if (and words (not (string-empty-p words))) (concat ", " words) "")
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
  '((:restored . "Put back by this rewind")
    (:droppedBeforeCrossing . "Held back and never sent: dropped")
    (:crossedUncompensated . "Already left this machine; nothing undoes them")
    (:crossedCompensated . "Left this machine; a later step makes up for them (not re-run)")
    (:wouldCrossOnRewind . "Not undone: undoing them would itself leave this machine")
    (:unrestored . "Changed this machine in a way the rewind cannot put back")
    (:provablyEmpty . "Changed nothing"))
  "The seven effect lists of a candidate, in order, by their people's names.
For an older server only: a current one says them in the candidate's
`effectWords' (docs/effects.md, \"In words\"; tests/test_words.py).")

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
                      (format "  %-8s %s%s%s\n"
                              (cond ((equal action "restore")
                                     (if (equal (plist-get f :from) "absent") "recreate" "restore"))
                                    ((equal action "kept") "keep")
                                    (t action))
                              (turnback--display-path (plist-get f :uri) root)
                              (if (turnback-user-edit-p f)
                                  (turnback--warn (format "  (your edit, %s)" (turnback-user-edit-by f)))
                                "")
                              (if (plist-get f :pushed)
                                  (turnback--warn (format "  (committed and pushed to %s: this change has left the machine)"
                                                          (plist-get f :pushed)))
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

(defun turnback-keep-words (file)
  "What keeping the user's edits does to FILE (its `merge'), in words."
  (let* ((merge (plist-get file :merge))
         (turns (turnback--list (plist-get merge :alsoChangedBy)))
         (by (format "%s %s" (if (cdr turns) "turns" "turn")
                     (mapconcat #'number-to-string turns ", "))))
    (pcase (plist-get merge :result)
      ("yours" "stays as you left it")
      ("merged" (format "your edit is carried onto the restored file (%s changed it too)" by))
      ("conflict" (format "conflict with %s: left as it is now (m writes conflict markers)" by))
      ("binary" "not a text file: kept whole, as it is now")
      ("unmergeable" (format "kept as it is now (%s)" (or (plist-get merge :detail) "it cannot be merged")))
      (_ "left as it is now"))))

(defun turnback-plan-conflicts-p (files)
  "Non-nil when keeping the user's edits among FILES meets a conflict."
  (cl-some (lambda (f) (equal (turnback--get f :merge :result) "conflict"))
           (cl-remove-if-not #'turnback-user-edit-p files)))

(defun turnback--render-external (files root)
  "The section listing the user's edits among FILES, relative to ROOT.
Each says what keeping them does to it: merged onto the restored file,
left as it is (a conflict, a binary file), or kept as you left it."
  (let ((edits (cl-remove-if-not #'turnback-user-edit-p files)))
    (concat (turnback--heading "Your edits that will be overwritten")
            (if (null edits) "  none\n"
              (concat
               (mapconcat (lambda (f)
                            (concat
                             (turnback--warn
                              (format "  %s (%s)\n" (turnback--display-path (plist-get f :uri) root)
                                      (turnback-user-edit-by f)))
                             (if (plist-get f :merge)
                                 (format "    k keeps it: %s\n" (turnback-keep-words f))
                               "")))
                          edits "")
               (if (cl-some (lambda (f) (plist-get f :merge)) edits)
                   "  (k commits and keeps your edits as said above)\n"
                 "  (k commits but leaves these files as they are now)\n"))))))

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
     (pcase (plist-get candidate :mode)
       ("files" "  Files only: every turn of the conversation stays; the files go back.\n\n")
       ("conversation" "  Conversation only: the turns go; every file stays as it is now.\n\n")
       (_ ""))
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
     "\n" (turnback--heading (if (equal (plist-get candidate :mode) "files")
                                 "What the later turns' steps did (they stay; their files go back)"
                               "What the discarded steps did"))
     (turnback--render-effects effects (plist-get candidate :stepSummaries)
                               (plist-get candidate :steps) (plist-get candidate :effectWords))
     "\n" (turnback--heading "Directives")
     (if (null directives) "  no directive changes\n"
       (mapconcat (lambda (d)
                    (format "  %s: %s discarded, becomes %s\n"
                            (let ((name (or (plist-get d :request)
                                            (cdr (assoc (plist-get d :id)
                                                        (plist-get candidate :directiveNames))))))
                              (if name (format "“%s”" (turnback-directive-name name))
                                (format "directive %s" (plist-get d :id))))
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
     "\n" (turnback--keys-line "rewind" files (not (plist-get candidate :operation))) "\n")))

(defun turnback--keys-line (what files &optional modes)
  "The keys of a confirmation for WHAT (rewind or redo) of FILES.
With MODES, the keys that show the rewind in another mode too."
  (propertize (concat (format "y: commit this %s    " what)
                      (if (cl-some #'turnback-user-edit-p files) "k: commit, keeping your edits    " "")
                      (if (turnback-plan-conflicts-p files) "m: keep, with conflict markers    " "")
                      "q: cancel"
                      (if modes "\na: files and conversation   f: files only   c: conversation only" ""))
              'face 'bold))

(defun turnback-directive-name (request)
  "A directive's name: the first line of its REQUEST, shortened."
  (turnback--one-line (car (split-string (or request "") "\n")) 50))

(defun turnback--render-effects (effects summaries &optional steps words)
  "The effect lists of EFFECTS that hold a step, by their people's names.
The names are WORDS (the candidate's `effectWords'), else our own for an
older server.  Each step is shown by what it did: its `what' from STEPS
(the candidate's steps in words), else its summary from SUMMARIES (an
alist of id and text, from an older server), else its id."
  (let ((shown (cl-remove-if-not (lambda (cell) (turnback--list (plist-get effects (car cell))))
                                 turnback--effect-labels)))
    (if (null shown) "  no step to account for\n"
      (mapconcat
       (lambda (cell)
         (concat (format "  %s:\n" (or (plist-get words (car cell)) (cdr cell)))
                 (mapconcat
                  (lambda (id)
                    (let* ((step (cl-find id (turnback--list steps) :key (lambda (x) (plist-get x :id))
                                          :test #'equal))
                           (text (or (plist-get step :what) (cdr (assoc id summaries)))))
                      (format "    %s%s\n"
                              (if (and text (not (string-empty-p text))) (turnback--one-line text 70)
                                (format "step %s" id))
                              (if (plist-get step :turn) (format " (turn %s)" (plist-get step :turn)) ""))))
                  (turnback--list (plist-get effects (car cell))) "")))
       shown ""))))

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

(defun turnback-redo-label (g)
  "A Redo group G, labelled by what it brings back.
The turns, the files, the time."
  (let* ((n (or (plist-get g :turnCount) 0))
         (shared (plist-get g :sharedTurns))
         (changes (plist-get g :changes))
         (paths (turnback--list (plist-get changes :paths)))
         (count (or (plist-get changes :files) 0)))
    (concat
     (cond ((and (numberp shared) (> n shared))
            (format "%s back" (if (= (1+ shared) n) (format "turn %s" n)
                                (format "turns %s–%s" (1+ shared) n))))
           ((zerop n) "the empty session")
           (t (format "the session as it was after turn %s" n)))
     (format ", last “%s”" (turnback--one-line (plist-get g :lastPrompt) 40))
     (if changes
         (format "; %s%s" (if paths (mapconcat #'identity paths ", ") "no file")
                 (if (> count (length paths)) (format " and %d more" (- count (length paths))) ""))
       "")
     (if (numberp (plist-get g :created))
         (format-time-string "; saved %Y-%m-%d %H:%M" (plist-get g :created))
       "")
     (if (turnback--true-p (plist-get g :ancestor)) " (earlier on this line)" "")
     (if (turnback--true-p (plist-get g :frozenParent))
         " (a state of the frozen session this one was forked from)" "")
     (if (turnback--true-p (plist-get g :keptBefore))
         " (what a rewind, Redo or fork overwrote: your uncaptured edits)" "")
     (format "  (head %s)" (plist-get g :headSeq)))))

(defun turnback-redo-choices (groups &optional hidden)
  "Completion choices for Redo GROUPS: (LABEL . HEADSEQ), newest first.
Each says what it brings back.  When HIDDEN earlier states were
left out, a last entry (value `all') offers every state."
  (append
   (mapcar (lambda (g) (cons (turnback-redo-label g) (plist-get g :headSeq))) groups)
   (when (and hidden (> hidden 0)) (list (cons turnback--all-states-choice 'all)))))

(defun turnback-boundary-words (boundary)
  "BOUNDARY as a person says it: \"after turn 2\", \"before turn 3\"."
  (pcase (plist-get boundary :kind)
    ("afterResponse" (format "after turn %s" (plist-get boundary :turn)))
    ("beforePrompt" (format "before turn %s" (plist-get boundary :turn)))
    (_ (format "before the attempt of turn %s" (plist-get boundary :turn)))))

(defun turnback-restore-choices (log uri &optional folder)
  "Where a restore of URI can go, from LOG: (LABEL . BOUNDARY), newest first.
The turns that changed URI (every turn for a FOLDER), each as it was
after the turn and before it.  A file that was a folder in a turn (its
folder key or a file in it) counts as changed by that turn."
  (cl-loop for turn in (reverse (turnback--list (plist-get log :turns)))
           for n = (plist-get turn :turn)
           for prompt = (turnback--one-line (plist-get turn :prompt) 50)
           when (or folder (cl-some (lambda (f)
                                      (let ((u (plist-get f :uri)))
                                        (or (equal u uri) (string-prefix-p (concat uri "/") u))))
                                    (turnback--list (plist-get turn :files))))
           append (list (cons (format "as it was after turn %s “%s”" n prompt)
                              (list :kind "afterResponse" :turn n))
                        (cons (format "as it was before turn %s “%s”" n prompt)
                              (list :kind "beforePrompt" :turn n)))))

(defun turnback-restore-title (plan &optional root)
  "The title of the restore PLAN (a restore candidate), relative to ROOT."
  (let ((paths (mapcar (lambda (f) (turnback--display-path (plist-get f :uri) root))
                       (cl-remove-if (lambda (f) (equal (plist-get f :action) "unchanged"))
                                     (turnback--list (plist-get plan :files))))))
    (format "Restore %s to how %s %s"
            (if paths (string-join paths ", ") "the files")
            (if (cdr paths) "they were" "it was")
            (turnback-boundary-words (plist-get plan :boundary)))))

(provide 'turnback-render)
;;; turnback-render.el ends here
