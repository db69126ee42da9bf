;;; turnback-editors-test.el --- ERT tests of issues 26 and 23 in turnback.el  -*- lexical-binding: t; no-byte-compile: t; -*-

;;; Commentary:

;; The Emacs client as people live in it (issue 26) and its side of restore and the rewind modes
;; (issue 23 item 4): the keep that merges (the issue's scenario ends with working code), conflict
;; markers on request, effects in words, per-turn diffs in diff-mode and ediff, your own edits in
;; the session view, a view that refreshes itself, the lineage and the frozen parent, a worktree
;; fork, buffers that follow the agent's edits, Redo labelled by what it brings back, restore one
;; file, files only and conversation only.  Against the real `turnback serve' (the helpers come
;; from turnback-test.el and turnback-ux-test.el, loaded before this file).

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'turnback)
(require 'turnback-test)
(require 'turnback-ux-test)

(defconst turnback-editors--app "def hello():\n    return 'hello'\n\n\ndef bye():\n    return 'bye'\n")
(defconst turnback-editors--test
  (concat "import sys, os\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\n"
          "from app import bye, hello\n\n\ndef test_app():\n    assert hello() == 'hello'\n"
          "    assert bye() == 'bye'\n\n\nif __name__ == '__main__':\n    test_app()\n    print('ok')\n"))
(defconst turnback-editors--comment "# Greetings, kept short: see the style guide.\n")

(defun turnback-editors--renamed (text)
  (replace-regexp-in-string "bye" "farewell" text t t))

(defun turnback-editors--issue-session (server root)
  "The issue's session, through real buffers: turn 3 renames bye in both files; between turns 3
and 4 the user saves a comment at the top of src/app.py; turn 4 touches the README."
  (turnback-test--turn server "write the app"
                       (lambda ()
                         (turnback-editors--save root "src/app.py" turnback-editors--app)
                         (turnback-editors--save root "tests/test_app.py" turnback-editors--test))
                       "wrote it")
  (turnback-test--turn server "add a readme" (lambda () (turnback-test--save root "README.md" "# app\n")))
  (turnback-test--turn server "rename bye to farewell"
                       (lambda ()
                         (turnback-editors--save root "src/app.py" (turnback-editors--renamed turnback-editors--app))
                         (turnback-editors--save root "tests/test_app.py"
                                              (turnback-editors--renamed turnback-editors--test))))
  (turnback-editors--save root "src/app.py"
                       (concat turnback-editors--comment (turnback-editors--renamed turnback-editors--app)))
  (turnback-test--turn server "document it"
                       (lambda () (turnback-test--save root "README.md" "# app\n\nSays hello.\n"))))

(defun turnback-editors--wait-events (pred &optional seconds)
  "Like `turnback-test--wait', but also reading events: in batch mode a file
watch's events are input events, which only `read-event' delivers."
  (let ((deadline (+ (float-time) (or seconds 10))) value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.02)
      (ignore-errors (read-event nil nil 0.02)))
    value))

(defun turnback-editors--save (root name text)
  "`turnback-test--save', making NAME's folder first."
  (make-directory (file-name-directory (expand-file-name name root)) t)
  (turnback-test--save root name text))

(defun turnback-editors--runs (root)
  "The output of running the app's test with Python (fails the test when it does not run)."
  (with-temp-buffer
    (let ((status (call-process (turnback-ux--python) nil t nil
                                (expand-file-name "tests/test_app.py" root))))
      (should (eql status 0))
      (string-trim (buffer-string)))))

(defun turnback-editors--view-text ()
  (buffer-substring-no-properties (point-min) (point-max)))

(defun turnback-editors--goto (text)
  "Move point to the start of the first line containing TEXT."
  (goto-char (point-min))
  (should (search-forward text nil t))
  (beginning-of-line))

;;;; Pure

(ert-deftest turnback-editors-render-effects-in-words ()
  (let* ((c (append '(:steps [(:id "s2.1" :turn 2 :what "ran “git push origin main”" :bucket "crossedUncompensated")
                              (:id "s2.2" :turn 2 :what "ran “printf x > CHANGELOG.md”" :bucket "restored")])
                    (plist-put (copy-sequence turnback-test--candidate) :effects
                               '(:restored ["s2.2"] :droppedBeforeCrossing [] :crossedUncompensated ["s2.1"]
                                 :crossedCompensated [] :wouldCrossOnRewind [] :unrestored []
                                 :provablyEmpty []))))
         (text (substring-no-properties (turnback-render-candidate c "/ws/"))))
    (should (string-search (concat "What the discarded steps did\n"
                                   "  Put back by this rewind:\n    ran “printf x > CHANGELOG.md” (turn 2)\n"
                                   "  Already left this machine; nothing undoes them:\n"
                                   "    ran “git push origin main” (turn 2)\n")
                           text))
    (dolist (key '("restored" "crossedUncompensated" "provablyEmpty" "droppedBeforeCrossing" "step s2.1\n"))
      (should-not (string-search key text)))
    (should-not (string-search "Changed nothing" text))))

(ert-deftest turnback-editors-keep-words-and-redo-labels ()
  (let ((file '(:uri "file:///ws/app.py" :action "restore" :userEdit t :userEditBy "editor-save"
                :merge (:result "conflict" :alsoChangedBy [2 3] :conflicts 1))))
    (should (equal (turnback-keep-words file)
                   "conflict with turns 2, 3: left as it is now (m writes conflict markers)"))
    (should (turnback-plan-conflicts-p (list file)))
    (should (string-search "m: keep, with conflict markers"
                           (substring-no-properties (turnback--keys-line "rewind" (list file) t)))))
  (should (equal (turnback-redo-label '(:headSeq 9 :turnCount 6 :sharedTurns 3 :lastPrompt "ship it"
                                        :changes (:files 7 :paths ["a.py" "b.py"])
                                        :created 0))
                 (format "turns 4–6 back, last “ship it”; a.py, b.py and 5 more%s  (head 9)"
                         (format-time-string "; saved %Y-%m-%d %H:%M" 0))))
  ;; a frozen parent's state and a kept *before* state say what they are (issue 25 item 7)
  (should (equal (turnback-redo-label '(:headSeq 4 :turnCount 3 :sharedTurns 2 :lastPrompt "rename"
                                        :frozenParent t :keptBefore t))
                 (concat "turn 3 back, last “rename” (a state of the frozen session this one was "
                         "forked from) (what a rewind, Redo or fork overwrote: your uncaptured "
                         "edits)  (head 4)")))
  (should-not (string-match-p "frozen" (turnback-redo-label '(:headSeq 2 :turnCount 2
                                                              :frozenParent :json-false))))
  (let ((log '(:turns [(:turn 1 :prompt "one" :files [(:uri "file:///ws/a.py")])
                       (:turn 2 :prompt "two" :files [(:uri "file:///ws/b.py")])])))
    (should (equal (turnback-restore-choices log "file:///ws/a.py")
                   '(("as it was after turn 1 “one”" . (:kind "afterResponse" :turn 1))
                     ("as it was before turn 1 “one”" . (:kind "beforePrompt" :turn 1)))))
    (should (= (length (turnback-restore-choices log "file:///ws/" t)) 4))))

;;;; Against the real server

(ert-deftest turnback-editors-keep-merges-and-the-code-runs ()
  "Issue 26 §1 in Emacs: k merges the comment onto the restored app.py; the code runs."
  (turnback-test--with-workspace ('(("README.md" . "readme\n")))
    (turnback-editors--issue-session server root)
    (with-current-buffer (find-file-noselect (expand-file-name "src/app.py" root))
      (turnback-test--choosing "^3: rename" (turnback-rewind-to-prompt)))
    (let ((text (turnback-test--confirm-text)))
      (should (string-search (concat "Your edits that will be overwritten\n  src/app.py (saved in the editor)\n"
                                     "    k keeps it: your edit is carried onto the restored file (turn 3 changed it too)")
                             text))
      (should-not (string-search "m: keep, with conflict markers" text)))
    (let ((shown (turnback-ux--messages
                   (with-current-buffer "*turnback-confirm*"
                     (should (equal (plist-get (turnback-confirm-commit-keeping-edits) :status) "committed"))))))
      (should (cl-some (lambda (m) (string-search "merged your edits onto src/app.py" m)) shown)))
    (should (equal (turnback-test--read (expand-file-name "src/app.py" root))
                   (concat turnback-editors--comment turnback-editors--app)))
    (should (equal (turnback-test--read (expand-file-name "tests/test_app.py" root)) turnback-editors--test))
    ;; the buffer follows the merged file
    (should (equal (with-current-buffer (find-buffer-visiting (expand-file-name "src/app.py" root))
                     (buffer-string))
                   (concat turnback-editors--comment turnback-editors--app)))
    (should (equal (turnback-editors--runs root) "ok"))))

(ert-deftest turnback-editors-conflict-markers-only-with-m ()
  (turnback-test--with-workspace ('(("app.py" . "x = 1\n")))
    (turnback-test--turn server "one" (lambda () (turnback-test--save root "app.py" "x = 1\ny = 1\n")) "one")
    (turnback-test--turn server "two" (lambda () (turnback-test--save root "app.py" "x = 1\ny = 2\n")))
    (turnback-test--save root "app.py" "x = 1\ny = 3\n")
    (with-current-buffer (find-file-noselect (expand-file-name "app.py" root))
      (turnback-test--choosing "^1: one" (turnback-rewind-at-response)))
    (let ((text (turnback-test--confirm-text)))
      (should (string-search "k keeps it: conflict with turn 2: left as it is now" text))
      (should (string-search "m: keep, with conflict markers" text)))
    (with-current-buffer "*turnback-confirm*"
      (should (eq (key-binding "m") #'turnback-confirm-commit-with-markers))
      (should (equal (plist-get (turnback-confirm-commit-with-markers) :status) "committed")))
    (should (equal (turnback-test--read (expand-file-name "app.py" root))
                   "x = 1\n<<<<<<< your edit\ny = 3\n=======\ny = 1\n>>>>>>> as restored\n"))))

(ert-deftest turnback-editors-session-view-diffs-and-your-edits ()
  "The session view in words, your own edits as yours, RET opens diff-mode, e opens ediff."
  (turnback-test--with-workspace ('(("README.md" . "readme\n")))
    (turnback-editors--issue-session server root)
    (with-current-buffer (find-file-noselect (expand-file-name "README.md" root))
      (turnback-session))
    (with-current-buffer "*turnback-session*"
      (let ((text (turnback-editors--view-text)))
        (should (string-search "turnback session “write the app”" text))
        (should (string-search "    src/app.py  changed\n" text))
        ;; the folders turn 1 made are no files: a line of their own, no row to open a diff on
        (should (string-search "  folders: src/ (created), tests/ (created)\n" text))
        (should-not (string-search "    src/  " text))
        (should (string-search "  your own edits after turn 3, before turn 4:\n    src/app.py  changed (saved in the editor)\n"
                               text))
        (should-not (string-match-p "[0-9a-f]\\{8\\} -> " text)))
      ;; the turn's change
      (turnback-editors--goto "Turn 3 ")
      (search-forward "src/app.py")
      (turnback-diff-at-point)
      (with-current-buffer "*turnback-diff*"
        (should (eq major-mode 'diff-mode))
        (should buffer-read-only)
        (let ((text (turnback-editors--view-text)))
          (should (string-search "Turn 3 “rename bye to farewell”:\n  src/app.py: changed, 2 lines added, 2 removed" text))
          (should (string-search "--- src/app.py\tbefore turn 3\n+++ src/app.py\tafter turn 3\n" text))
          (should (string-search "+def farewell():" text))
          (should-not (string-search "Greetings" text))))
      ;; your own edit, as what it is
      (turnback-editors--goto "your own edits after turn 3")
      (forward-line 1)
      (turnback-diff-at-point)
      (with-current-buffer "*turnback-diff*"
        (let ((text (turnback-editors--view-text)))
          (should (string-search "Your own edits after turn 3, before turn 4:" text))
          (should (string-search "+++ src/app.py\tyour edit after turn 3, saved in the editor" text))
          (should (string-search "+# Greetings" text))
          (should-not (string-search "+def farewell" text))))
      ;; ediff of the turn's two sides
      (turnback-editors--goto "Turn 3 ")
      (search-forward "tests/test_app.py")
      (let (seen)
        (cl-letf (((symbol-function 'ediff-buffers)
                   (lambda (a b) (setq seen (list (with-current-buffer a (buffer-string))
                                                  (with-current-buffer b (buffer-string))
                                                  (buffer-name a))))))
          (turnback-ediff-at-point))
        (should (equal (nth 0 seen) turnback-editors--test))
        (should (equal (nth 1 seen) (turnback-editors--renamed turnback-editors--test)))
        (should (string-search "before turn 3" (nth 2 seen)))))
    (kill-buffer "*turnback-session*")))

(ert-deftest turnback-editors-view-refreshes-when-an-agent-works ()
  "A turn the agent runs from another process shows up in the open view; its edit reverts the
unmodified buffer of that file."
  (turnback-test--with-workspace ('(("a.txt" . "a0\n")))
    (turnback-test--turn server "one" (lambda () (turnback-test--save root "a.txt" "a1\n")))
    (let ((buffer (find-file-noselect (expand-file-name "a.txt" root))))
      (with-current-buffer buffer (turnback-session))
      (should (turnback-test--wait (lambda () (> (hash-table-count (turnback--file-watches server)) 0)) 5))
      ;; the agent, through the command line and the live sidecar's socket
      (let ((turnback (executable-find (car (turnback-test--server-command)))))
        (should (eql 0 (call-process turnback nil nil nil "--workspace" root "turn" "begin"
                                     "--prompt" "the agent's turn")))
        (turnback-test--write (expand-file-name "a.txt" root) "the agent wrote this\n")
        (should (eql 0 (call-process turnback nil nil nil "--workspace" root "turn" "capture"
                                     (expand-file-name "a.txt" root))))
        (should (eql 0 (call-process turnback nil nil nil "--workspace" root "turn" "settle"))))
      (should (turnback-editors--wait-events
               (lambda () (with-current-buffer buffer (equal (buffer-string) "the agent wrote this\n")))))
      (should (turnback-editors--wait-events
               (lambda () (with-current-buffer "*turnback-session*"
                            (string-search "prompt:  the agent's turn" (turnback-editors--view-text)))))))
    (kill-buffer "*turnback-session*")))

(ert-deftest turnback-editors-restore-one-file-and-the-modes ()
  "Issue 23 item 4: restore one file to a turn; a rewind for the files only, then the conversation only."
  (turnback-test--with-workspace ('(("README.md" . "readme\n")))
    (turnback-editors--issue-session server root)
    (let ((test (expand-file-name "tests/test_app.py" root))
          (app (expand-file-name "src/app.py" root)))
      (with-current-buffer (find-file-noselect test)
        (turnback-test--choosing "^as it was before turn 3" (turnback-restore-file test)))
      (let ((text (turnback-test--confirm-text)))
        (should (string-search "Restore tests/test_app.py to how it was before turn 3" text))
        (should (string-search "restore  tests/test_app.py" text))
        (should-not (string-search "src/app.py" (car (split-string text "\n\nGaps")))))
      (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
      (should (equal (turnback-test--read test) turnback-editors--test))
      (should (equal (turnback-test--read app)
                     (concat turnback-editors--comment (turnback-editors--renamed turnback-editors--app))))
      (should (= (length (plist-get (turnback--request server :turnback/session/log) :turns)) 4))
      ;; the rewind in files-only mode: every turn stays, the files go back
      (with-current-buffer (find-file-noselect app)
        (turnback-test--choosing "^2: add a readme" (turnback-rewind-to-prompt)))
      (with-current-buffer "*turnback-confirm*" (turnback-confirm-mode-files))
      (let ((text (turnback-test--confirm-text)))
        (should (string-search "Files only: every turn of the conversation stays" text))
        (should (string-search "Kept\n  4 turns" text)))
      (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
      (should (equal (turnback-test--read (expand-file-name "README.md" root)) "readme\n"))
      (should (= (length (plist-get (turnback--request server :turnback/session/log) :turns)) 4))
      ;; conversation only: the turns go, every file stays
      (let ((before (turnback-test--read test)))
        (with-current-buffer (find-file-noselect app)
          (turnback-test--choosing "^3: rename" (turnback-rewind-to-prompt)))
        (with-current-buffer "*turnback-confirm*" (turnback-confirm-mode-conversation))
        (should (string-search "Conversation only: the turns go; every file stays as it is now."
                               (turnback-test--confirm-text)))
        (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
        (should (equal (turnback-test--read test) before))
        (should (= (length (plist-get (turnback--request server :turnback/session/log) :turns)) 2))))))

(ert-deftest turnback-editors-restore-that-gaps-stand-in-the-way-of-says-so ()
  "Issue 43's long run: a folder the user put where the file was, and a file
where its folder was: the restore changes nothing and says why in the
server's words, never \"already is as it was\"; what the user put stays."
  (turnback-test--with-workspace ('(("a.txt" . "a\n")))
    (turnback-test--turn server "one" (lambda ()
                                        (turnback-test--save root "p" "P\n")
                                        (make-directory (expand-file-name "d" root))
                                        (turnback-test--save root "d/f" "f\n"))
                         "did one")
    (dolist (b (buffer-list))
      (when (and (buffer-file-name b) (string-prefix-p (file-truename root) (file-truename (buffer-file-name b))))
        (kill-buffer b)))
    (delete-file (expand-file-name "p" root))
    (make-directory (expand-file-name "p" root))
    (delete-directory (expand-file-name "d" root) t)
    (with-temp-file (expand-file-name "d" root) (insert "mine\n"))
    (dolist (case '(("p" . "not-a-file") ("d" . "not-a-directory")))
      (let* ((file (expand-file-name (car case) root))
             (plan (turnback--request server :turnback/restore/prepare
                                      (list :paths (vector (turnback--path-to-uri file))
                                            :boundary (list :kind "afterResponse" :turn 1))))
             (gap (cl-find (cdr case) (turnback--list (plist-get plan :gaps))
                           :key (lambda (g) (plist-get g :reason)) :test #'equal))
             (said nil))
        (should (turnback--true-p (plist-get plan :noop)))
        (should (plist-get gap :words))
        (cl-letf (((symbol-function 'message)
                   (lambda (fmt &rest args) (push (apply #'format fmt args) said))))
          (turnback-test--choosing "^as it was after turn 1" (turnback-restore-file file)))
        (should (equal said (list (concat "turnback: " (plist-get plan :summary)))))
        (should (string-search (plist-get gap :words) (car said)))
        (should-not (string-search "already is as it was" (car said)))))
    (should (file-directory-p (expand-file-name "p" root)))
    (should (equal (turnback-test--read (expand-file-name "d" root)) "mine\n"))))

(ert-deftest turnback-editors-lineage-frozen-parent-and-worktree-fork ()
  (turnback-test--with-workspace ('(("a.txt" . "a0\n")))
    (turnback-test--turn server "one" (lambda () (turnback-test--save root "a.txt" "a1\n")) "did one")
    (turnback-test--turn server "two" (lambda () (turnback-test--save root "a.txt" "a2\n")) "did two")
    ;; a fork here: this session freezes
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (turnback-test--choosing "^1: did one" (turnback-fork-at-response)))
    (should (equal (plist-get (turnback-confirm-commit) :status) "forked"))
    ;; then a worktree fork of the branch: this folder stays as it is
    (let ((folder (concat (directory-file-name root) "-wt")))
      (unwind-protect
          (progn
            (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
              (turnback-test--choosing "^1: " (turnback-fork-at-response)))
            (should (string-search "w: fork into a new folder" (turnback-test--confirm-text)))
            (cl-letf (((symbol-function 'read-directory-name) (lambda (&rest _) folder)))
              (with-current-buffer "*turnback-confirm*"
                (should (equal (plist-get (call-interactively #'turnback-confirm-fork-into-worktree) :status)
                               "forked"))))
            (should (equal (turnback-test--read (expand-file-name "a.txt" folder)) "a1\n"))
            (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "a1\n")))
        (delete-directory folder t)))
    ;; the lineage shows them all, the frozen parent readable
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (turnback-lineage))
    (with-current-buffer "*turnback-lineage*"
      (let ((text (turnback-editors--view-text)))
        (should (string-match-p "■ “one” · 2 turns · frozen (read only)" text))
        (should (string-match-p "● “one” · 1 turn · forked at turn 1 · this session" text))
        (should (string-search "    ○ " text))  ; the worktree branch, under this one
        (should (string-search "forked at turn 1 · in " text)))
      (turnback-editors--goto "■ “")
      (turnback-lineage-open))
    (let ((view (cl-find-if (lambda (b) (string-prefix-p "*turnback-session " (buffer-name b))) (buffer-list))))
      (should view)
      (with-current-buffer view
        (let ((text (turnback-editors--view-text)))
          (should (string-search "2 turns · frozen: it was forked (read only)" text))
          (should (string-search "prompt:  two" text)))
        (turnback-editors--goto "Turn 2 ")
        (should-error (turnback-session-rewind-at-response) :type 'user-error)
        (search-forward "a.txt")
        (turnback-diff-at-point)
        (should (string-search "+a2" (with-current-buffer "*turnback-diff*" (turnback-editors--view-text)))))
      (kill-buffer view))
    (kill-buffer "*turnback-lineage*")))

(provide 'turnback-editors-test)
;;; turnback-editors-test.el ends here
