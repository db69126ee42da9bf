;;; turnback-test.el --- ERT tests of turnback.el  -*- lexical-binding: t; no-byte-compile: t; -*-

;;; Commentary:

;; Two kinds of tests:
;; - pure ones render candidates, plans, gaps and directives (no server);
;; - integration ones start the real `turnback serve' (the command in the
;;   environment variable TURNBACK_SERVER, default "turnback serve") in a
;;   temporary workspace, drive turns through real buffers and the
;;   interactive commands, and check the files on disk, the mode line and
;;   the directive overlays.  They are skipped only when no server
;;   program can be found (run-tests.sh refuses to run in that case).
;;
;; Run: emacs --batch -l ert -l turnback.el -l test/turnback-test.el \
;;        -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'turnback)

;;;; Fixtures

(defconst turnback-test--candidate
  '(:planHash "2f81"
    :boundary (:kind "beforePrompt" :turn 2)
    :keep (:turnCount 1 :last (:turn 1 :prompt "first"))
    :discard (:turnCount 1 :first (:turn 2 :prompt "second"))
    :files [(:uri "file:///ws/a.txt" :path "a.txt" :action "restore" :from "e7" :to "1d"
             :externalChange :json-false)
            (:uri "file:///ws/b.txt" :path "b.txt" :action "delete" :from "21" :to "absent"
             :externalChange t)
            (:uri "file:///ws/c.txt" :action "unchanged" :externalChange :json-false)]
    :gaps [(:uri nil :turn 2 :reason "step-scope-unknown"
            :detail "step s2.1 (shell) did not say its scope")
           (:uri "file:///ws/big.bin" :turn 2 :reason "too-large")]
    :effects (:restored [] :droppedBeforeCrossing [] :crossedUncompensated ["s2.1"]
              :crossedCompensated [] :wouldCrossOnRewind [] :unrestored ["s2.2"] :provablyEmpty [])
    :directives [(:id "d1" :attemptsDiscarded 1 :stateAfter "ready")]
    :workflowCleared (:tasks 2 :goals 1 :agents 0 :handoffs 0)
    :summary "Keeps turns 1–1, ending with turn 1 (“first”). Discards 1 turn(s) from turn 2.")
  "A candidate shaped like the server's (the smoke session's rewind).")

(defun turnback-test--server-command ()
  "The server command from TURNBACK_SERVER, or (\"turnback\" \"serve\")."
  (let ((env (getenv "TURNBACK_SERVER")))
    (if (and env (not (string-empty-p env)))
        (split-string-and-unquote env)
      '("turnback" "serve"))))

(defun turnback-test--server-available-p ()
  (executable-find (car (turnback-test--server-command))))

(defun turnback-test--wait (pred &optional seconds)
  "Process output until PRED returns non-nil or SECONDS (default 10) pass."
  (let ((deadline (+ (float-time) (or seconds 10))) value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    value))

(defun turnback-test--write (path text)
  (make-directory (file-name-directory path) t)
  (with-temp-file path (insert text)))

(defun turnback-test--read (path)
  (with-temp-buffer (insert-file-contents path) (buffer-string)))

(defmacro turnback-test--with-workspace (spec &rest body)
  "Run BODY with `root' bound to a fresh workspace and `server' to its sidecar.
SPEC is (FILES &rest BINDINGS): FILES an alist of (NAME . TEXT) written first,
BINDINGS let-bound around the start (e.g. turnback-initialization-options)."
  (declare (indent 1))
  `(progn
     (skip-unless (turnback-test--server-available-p))
     (let* ((root (file-name-as-directory (file-truename (make-temp-file "turnback-ert-" t))))
            (turnback-server-command (turnback-test--server-command))
            ,@(cdr spec)
            (server nil))
       (unwind-protect
           (progn
             (pcase-dolist (`(,name . ,text) ,(car spec))
               (turnback-test--write (expand-file-name name root) text))
             (setq server (turnback-start root))
             (should (turnback--live-p server))
             ,@body)
         (when server (turnback-stop server)
               (should-not (process-live-p (turnback--process server))))
         (dolist (b (buffer-list))
           (with-current-buffer b
             (when (and buffer-file-name (file-in-directory-p buffer-file-name root))
               (set-buffer-modified-p nil)
               (kill-buffer b))))
         (when (get-buffer "*turnback-confirm*") (kill-buffer "*turnback-confirm*"))
         (delete-directory root t)))))

(defun turnback-test--save (root name text)
  "Visit NAME in ROOT, replace its text with TEXT and save it.  Return the buffer."
  (let ((buffer (find-file-noselect (expand-file-name name root))))
    (with-current-buffer buffer
      (erase-buffer)
      (insert text)
      (save-buffer))
    buffer))

(defun turnback-test--turn (server prompt thunk &optional response)
  "Run a turn of SERVER with PROMPT: begin, THUNK, respond, settle.  Return its number."
  (let ((turn (plist-get (turnback--request server :turnback/turn/begin
                                            (list :kind "chat" :prompt prompt))
                         :turn)))
    (funcall thunk)
    (when response
      (turnback--request server :turnback/turn/respond (list :turn turn :text response)))
    (turnback--request server :turnback/turn/settle (list :turn turn :status "settled"))
    turn))

(defmacro turnback-test--choosing (pattern &rest body)
  "Run BODY answering every `completing-read' with the first choice matching PATTERN."
  (declare (indent 1))
  `(let ((offered nil))
     (cl-letf (((symbol-function 'completing-read)
                (lambda (_prompt table &rest _)
                  (let ((all (all-completions "" table)))
                    (push all offered)
                    (or (cl-find-if (lambda (c) (string-match-p ,pattern c)) all)
                        (error "No choice matches %S in %S" ,pattern all))))))
       ,@body)))

(defun turnback-test--confirm-text ()
  (with-current-buffer "*turnback-confirm*"
    (buffer-substring-no-properties (point-min) (point-max))))

(defun turnback-test--labels (&optional buffer)
  (mapcar (lambda (ov) (substring-no-properties (overlay-get ov 'after-string)))
          (turnback-directive-overlays buffer)))

;;;; Pure tests

(ert-deftest turnback-test-initialization-options ()
  (let ((turnback-store-kind "pid") (turnback-store-path nil)
        (turnback-capture-max-file-bytes 64) (turnback-capture-sweep :json-false)
        (turnback-collect-grace-heads nil)
        (turnback-initialization-options '(:capture (:maxFileBytes 128) :collect (:graceHeads 2))))
    (should (equal (turnback--initialization-options)
                   '(:store (:kind "pid")
                     :capture (:maxFileBytes 128 :sweep :json-false)
                     :collect (:graceHeads 2)))))
  (let ((turnback-store-kind nil) (turnback-store-path nil) (turnback-capture-max-file-bytes nil)
        (turnback-capture-sweep nil) (turnback-collect-grace-heads nil)
        (turnback-initialization-options nil))
    (should (null (turnback--initialization-options)))))

(ert-deftest turnback-test-missing-executable ()
  (let ((turnback-server-command '("turnback-no-such-program-here" "serve")))
    (let ((err (should-error (turnback-start temporary-file-directory) :type 'user-error)))
      (should (string-match-p "cannot find the server program .turnback-no-such-program-here."
                              (cadr err)))
      (should (string-match-p "turnback-server-command" (cadr err))))))

(ert-deftest turnback-test-render-candidate ()
  (let ((text (substring-no-properties (turnback-render-candidate turnback-test--candidate "/ws/"))))
    (dolist (needle '("Rewind to just before the prompt of turn 2"
                      "1 turn, ending with turn 1: “first”"
                      "1 turn with their answers, from turn 2: “second”"
                      "restore  a.txt"
                      "delete   b.txt  (your edit, no discarded turn made it)"
                      "(1 file unchanged)"
                      "Your edits that will be overwritten\n  b.txt (no discarded turn made it)"
                      "k: commit, keeping your edits"
                      "(no file): step-scope-unknown — step s2.1 (shell) did not say its scope (turn 2)"
                      "big.bin: too-large (turn 2)"
                      "Already left this machine; nothing undoes them:\n    step s2.1"
                      "Changed this machine in a way the rewind cannot put back:\n    step s2.2"
                      "directive d1: 1 attempt discarded, becomes ready"
                      "2 tasks, 1 goal, 0 agents, 0 handoffs"
                      "Discards 1 turn(s) from"
                      "y: commit this rewind"))
      (should (string-search needle text)))
    ;; Only the effect lists that hold a step, by their people's names; never the contract's keys.
    (dolist (cell turnback--effect-labels)
      (should-not (string-search (substring (symbol-name (car cell)) 1) text)))
    (should-not (string-search "Put back by this rewind" text))
    (should-not (string-search "none\n" (substring text (string-search "What the discarded" text)
                                                   (string-search "Directives" text))))))

(ert-deftest turnback-test-render-candidate-empty ()
  (let ((text (substring-no-properties
               (turnback-render-candidate
                '(:planHash "x" :keep (:turnCount 0) :discard (:turnCount 3 :first (:turn 1 :prompt "p"))
                  :files [] :gaps [] :effects () :directives [] :workflowCleared (:tasks 0 :goals 0 :agents 0 :handoffs 0)
                  :summary "Empties the session.")
                nil "Rewind everything"))))
    (should (string-prefix-p "Rewind everything" text))
    (should (string-search "nothing: the session becomes empty" text))
    (should (string-search "(no file changes)" text))
    (should (string-search "Gaps: what cannot be put back\n  none" text))
    (should (string-search "no directive changes" text))
    (should (string-search "Workflow cleared\n  nothing" text))))

(ert-deftest turnback-test-render-redo-plan ()
  (let ((text (substring-no-properties
               (turnback-render-redo-plan
                '(:headSeq 2 :turnCount 2 :currentHead 3 :planHash "d0"
                  :files [(:uri "file:///ws/a.txt" :action "restore" :from "1d" :to "e7" :externalChange :json-false)
                          (:uri "file:///ws/b.txt" :action "restore" :from "absent" :to "21" :externalChange :json-false)]
                  :gaps [(:uri nil :turn 2 :reason "step-scope-unknown")]
                  :summary "Brings back head 2.")
                "/ws/"))))
    (should (string-search "Redo: bring back head 2" text))
    (should (string-search "2 turns (head 2)" text))
    (should (string-search "(head 3)" text))
    (should (string-search "restore  a.txt" text))
    (should (string-search "recreate b.txt" text))
    (should (string-search "step-scope-unknown" text))
    (should (string-search "y: commit this redo" text))))

(ert-deftest turnback-test-mode-line-string ()
  (should (equal (substring-no-properties (turnback-mode-line-string nil)) " TB"))
  (let ((s (turnback-mode-line-string '(:liveGaps 0 :gaps [] :ownership "owner" :recovery 0))))
    (should (equal (substring-no-properties s) " TB"))
    (should-not (get-text-property 0 'face s)))
  (let ((s (turnback-mode-line-string
            '(:liveGaps 3 :gaps [(:uri "file:///ws/big.bin" :turn 1 :reason "too-large" :detail "2 MB")
                                 (:uri "file:///ws/link" :turn nil :reason "symlink")
                                 (:uri "file:///ws/secret" :reason "unreadable")]
              :ownership "owner" :recovery 0)
            "/ws/")))
    (should (equal (substring-no-properties s) " TB⚠3"))
    (should (eq (get-text-property 0 'face s) 'turnback-mode-line-warning))
    (let ((help (get-text-property 0 'help-echo s)))
      (should (string-search "3 gaps (a rewind cannot put them back)" help))
      (should-not (string-search "files cannot be captured" help))
      (should (string-search "big.bin: too-large — 2 MB (turn 1)" help))
      (should (string-search "link: symlink" help))
      (should (string-search "secret: unreadable" help))))
  (should (equal (substring-no-properties
                  (turnback-mode-line-string '(:liveGaps 0 :ownership "observer")))
                 " TB:observer")))

(ert-deftest turnback-test-directive-labels ()
  (should (equal (turnback-directive-label '(:state "answered" :anchor (:line 1 :attached t)))
                 "⟦directive: answered⟧"))
  (let ((d '(:state "answered" :request "make it shout" :anchor (:line 1 :attached :json-false))))
    (should (turnback-directive-detached-p d))
    (should (equal (turnback-directive-label d) "⟦directive detached: make it shout⟧")))
  (should (turnback-directive-detached-p '(:state "detached" :anchor (:line 0 :attached t))))
  (let ((buffer (generate-new-buffer " *tb-overlays*")))
    (unwind-protect
        (progn
          (with-current-buffer buffer (insert "zero\none\ntwo\n"))
          (turnback--apply-directives
           buffer [(:id "a" :state "ready" :request "r" :anchor (:line 1 :character 0 :attached t))
                   (:id "b" :state "detached" :request "gone" :anchor (:line 2 :character 0 :attached :json-false))])
          (should (equal (turnback-test--labels buffer)
                         '(" ⟦directive: ready⟧" " ⟦directive detached: gone⟧")))
          (with-current-buffer buffer
            (let ((ovs (turnback-directive-overlays)))
              (should (= (line-number-at-pos (overlay-start (car ovs))) 2))
              (should (eq (get-text-property 1 'face (overlay-get (cadr ovs) 'after-string))
                          'turnback-directive-detached)))
            (goto-char (point-min)) (forward-line 1)
            (should (equal (plist-get (turnback-directive-at-point) :id) "a")))
          ;; A new list replaces the old overlays.
          (turnback--apply-directives buffer [])
          (should (null (turnback-directive-overlays buffer))))
      (kill-buffer buffer))))

(ert-deftest turnback-test-choices ()
  (let ((log '(:turns [(:turn 1 :prompt "first" :response "did one" :state "settled")
                       (:turn 2 :prompt "second\nline" :response "" :state "cancelled")])))
    (should (equal (mapcar #'cdr (turnback-prompt-choices log)) '(2 1)))
    (should (equal (caar (turnback-prompt-choices log)) "2: second line"))
    (should (string-search "did one" (car (nth 1 (turnback-response-choices log)))))
    (should (string-search "(no response, cancelled)" (caar (turnback-response-choices log)))))
  (should (equal (mapcar #'cdr (turnback-redo-choices '((:headSeq 4 :turnCount 2 :lastPrompt "x"))))
                 '(4)))
  ;; The completion table keeps the order (newest first).
  (let ((table (turnback--completion-table '(("b" . 1) ("a" . 2)))))
    (should (eq (cdr (assq 'display-sort-function (cdr (funcall table "" nil 'metadata))))
                'identity))))

;;;; Integration tests against the real server

(ert-deftest turnback-test-rewind-and-redo ()
  "Turns through real buffers; rewind to a prompt, redo, rewind at a response."
  (turnback-test--with-workspace ('(("a.txt" . "one\n")))
    (let ((a (expand-file-name "a.txt" root))
          (b (expand-file-name "b.txt" root)))
      (turnback-test--turn server "first" (lambda () (turnback-test--save root "a.txt" "two\n"))
                           "made it two")
      (turnback-test--turn server "second"
                           (lambda ()
                             (turnback-test--save root "a.txt" "three\n")
                             (turnback-test--save root "b.txt" "new\n"))
                           "made it three")
      (should (equal (turnback-test--read a) "three\n"))
      ;; Rewind to before prompt 2, from the a.txt buffer.
      (with-current-buffer (find-file-noselect a)
        (turnback-test--choosing "^2: second"
          (turnback-rewind-to-prompt)
          (should (equal (car offered) '("2: second" "1: first")))))
      (let ((text (turnback-test--confirm-text)))
        (should (string-search "Rewind to just before the prompt of turn 2" text))
        (should (string-search "restore  a.txt" text))
        (should (string-search "delete   b.txt" text))
        (should (string-search "1 turn, ending with turn 1: “first”" text)))
      (let ((epoch-before (turnback--epoch server)))
        (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
        (should-not (get-buffer "*turnback-confirm*"))
        (should (equal (turnback-test--read a) "two\n"))
        (should-not (file-exists-p b))
        ;; The unmodified buffers follow: a.txt reverted, b.txt's killed.
        (should (equal (with-current-buffer (find-buffer-visiting a) (buffer-string)) "two\n"))
        (should-not (find-buffer-visiting b))
        (should (turnback-test--wait (lambda () (not (eq (turnback--epoch server) epoch-before)))))
        (should (equal (plist-get (turnback--epoch server) :source) "rewind"))
        (should (equal (plist-get (turnback--epoch server) :turnCount) 1)))
      ;; Redo brings the two-turn state back.
      (with-current-buffer (find-file-noselect a)
        (turnback-test--choosing "^turn 2 back, last “second”; a.txt, b.txt; saved "
          (turnback-redo)))
      (let ((text (turnback-test--confirm-text)))
        (should (string-search "Redo: bring back head" text))
        (should (string-search "recreate b.txt" text)))
      (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
      (should (equal (turnback-test--read a) "three\n"))
      (should (equal (turnback-test--read b) "new\n"))
      (should (equal (with-current-buffer (find-buffer-visiting a) (buffer-string)) "three\n"))
      ;; Rewind at the response of turn 1: keeps turn 1.
      (with-current-buffer (find-file-noselect a)
        (turnback-test--choosing "^1: made it two"
          (turnback-rewind-at-response)))
      (should (string-search "Rewind to just after the response of turn 1" (turnback-test--confirm-text)))
      (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
      (should (equal (turnback-test--read a) "two\n"))
      (should-not (file-exists-p b))
      (should (= (length (plist-get (turnback--request server :turnback/session/log) :turns)) 1)))))

(ert-deftest turnback-test-cancel-and-stale ()
  "q leaves everything alone; a stale plan re-renders the fresh candidate."
  (turnback-test--with-workspace ('(("a.txt" . "one\n")))
    (let ((a (expand-file-name "a.txt" root)))
      (turnback-test--turn server "first" (lambda () (turnback-test--save root "a.txt" "two\n")))
      (with-current-buffer (find-file-noselect a)
        (turnback-test--choosing "^1: first" (turnback-rewind-to-prompt)))
      (with-current-buffer "*turnback-confirm*"
        (should (eq (key-binding "q") #'turnback-confirm-cancel))
        (should (eq (key-binding "y") #'turnback-confirm-commit))
        (turnback-confirm-cancel))
      (should-not (get-buffer "*turnback-confirm*"))
      (should (equal (turnback-test--read a) "two\n"))
      ;; Prepare, then let the session move on before committing.
      (with-current-buffer (find-file-noselect a)
        (turnback-test--choosing "^1: first" (turnback-rewind-to-prompt)))
      (should (string-search "Discarded\n  1 turn " (turnback-test--confirm-text)))
      (turnback-test--turn server "second" (lambda () (turnback-test--save root "a.txt" "three\n")))
      (should (equal (plist-get (turnback-confirm-commit) :status) "stale"))
      (let ((text (turnback-test--confirm-text)))
        (should (string-search "The session changed since this plan was made" text))
        (should (string-search "Discarded\n  2 turns " text)))
      (should (equal (turnback-test--read a) "three\n"))
      (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
      (should (equal (turnback-test--read a) "one\n"))
      ;; The by-hand commands drive a turn too.
      (with-current-buffer (find-file-noselect a)
        (should (equal (turnback-turn-begin "by hand") 1))
        (turnback-test--save root "a.txt" "by hand\n")
        (should (plist-get (turnback-turn-settle) :headSeq))
        (should-error (turnback-turn-settle) :type 'user-error)
        (should (equal (plist-get (aref (plist-get (turnback-request :turnback/session/log) :turns) 0)
                                  :state)
                       "settled"))))))

(ert-deftest turnback-test-gap-mode-line ()
  "A file over capture.maxFileBytes shows as a gap in the mode line."
  (turnback-test--with-workspace ('(("a.txt" . "one\n") ("big.txt" . "small\n"))
                                  (turnback-initialization-options '(:capture (:maxFileBytes 64))))
    (should (member turnback--mode-line-construct global-mode-string))
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (should (turnback-test--wait (lambda () (turnback--status server))))
      (should (equal (substring-no-properties (eval (cadr turnback--mode-line-construct))) " TB"))
      ;; Unsaved changes leave no lock file (a dangling symlink) for the sweep to report.
      (should-not create-lockfiles)
      (goto-char (point-min)) (insert "unsaved ")
      (should-not (file-symlink-p (expand-file-name ".#a.txt" root)))
      (turnback-test--turn server "grow"
                           (lambda () (turnback-test--save root "big.txt" (make-string 1000 ?x))))
      (should (turnback-test--wait (lambda () (> (or (plist-get (turnback--status server) :liveGaps) 0) 0))))
      (let ((s (turnback-mode-line)))
        (should (equal (substring-no-properties s) " TB⚠1"))
        (should (string-search "big.txt: too-large" (get-text-property 0 'help-echo s))))
      ;; Outside the workspace there is no indicator.
      (with-temp-buffer
        (setq default-directory temporary-file-directory)
        (let ((turnback--servers (list (cons root server) (cons "/nonexistent/" nil))))
          (should-not (turnback-mode-line)))))))

;; The reason's words already say "a symbolic link; turnback never follows or
;; restores links": the real server's gap adds no second sentence saying it again.
(ert-deftest turnback-test-symlink-gap-said-once ()
  "A symlink's gap line says it is a symbolic link once."
  (turnback-test--with-workspace ('(("notes.txt" . "small\n")))
    (make-symbolic-link (expand-file-name "notes.txt" root) (expand-file-name "latest" root))
    (let* ((capture nil)
           (turn (turnback-test--turn
                  server "link"
                  (lambda ()
                    (setq capture (turnback--request
                                   server :turnback/turn/capture
                                   (list :uris (vector (concat "file://" root "latest"))))))))
           (gaps (append (plist-get capture :gaps) nil))
           (line (turnback-format-gap (car gaps) root)))
      (should (numberp turn))
      (should (equal (mapcar (lambda (g) (plist-get g :reason)) gaps) '("symlink")))
      (should (string-prefix-p "latest: symlink, a symbolic link" line))
      (with-temp-buffer
        (insert line)
        (should (= 1 (count-matches "symbolic link" (point-min) (point-max))))))))

(ert-deftest turnback-test-directives ()
  "Directive overlays follow their state; rewinding before an attempt."
  (turnback-test--with-workspace ('(("a.txt" . "one\nanchor\nthree\n")))
    (let ((a (expand-file-name "a.txt" root)))
      (with-current-buffer (find-file-noselect a)
        (goto-char (point-min)) (forward-line 1)
        (let* ((d (turnback-directive-add "make it shout"))
               (id (plist-get d :id)))
          (should (turnback-test--wait (lambda () (turnback-directive-overlays))))
          (should (equal (turnback-test--labels) '(" ⟦directive: ready⟧")))
          (should (= (line-number-at-pos (overlay-start (car (turnback-directive-overlays)))) 2))
          (let ((turn (plist-get (turnback--request server :turnback/turn/begin
                                                    (list :kind "directive" :prompt "make it shout"
                                                          :directiveId id))
                                 :turn)))
            (should (turnback-test--wait
                     (lambda () (equal (turnback-test--labels) '(" ⟦directive: running⟧")))))
            (goto-char (point-max)) (insert "SHOUT\n") (save-buffer)
            (turnback--request server :turnback/directive/record
                               (list :directiveId id :turn turn :answer "added SHOUT"))
            (turnback--request server :turnback/turn/settle (list :turn turn :status "settled")))
          (should (turnback-test--wait
                   (lambda () (equal (turnback-test--labels) '(" ⟦directive: answered⟧")))))
          ;; A buffer opened later gets the overlays too.
          (kill-buffer (current-buffer))
          (with-current-buffer (find-file-noselect a)
            (should (equal (turnback-test--labels) '(" ⟦directive: answered⟧")))
            ;; Point on the anchor line: the directive at point, its only attempt.
            (goto-char (point-min)) (forward-line 1)
            (cl-letf (((symbol-function 'completing-read)
                       (lambda (&rest _) (error "No question expected"))))
              (turnback-rewind-before-directive))
            (let ((text (turnback-test--confirm-text)))
              (should (string-search "before the attempt of turn 1 at directive" text))
              (should (string-search "“make it shout”: 1 attempt discarded" text)))
            (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
            (should (equal (turnback-test--read a) "one\nanchor\nthree\n"))
            (should (equal (with-current-buffer (find-buffer-visiting a) (buffer-string))
                           "one\nanchor\nthree\n"))
            (should (turnback-test--wait
                     (lambda () (equal (turnback-test--labels (find-buffer-visiting a))
                                       '(" ⟦directive: ready⟧")))))))))))

(ert-deftest turnback-test-redo-unavailable-on-pid-store ()
  "A plain file store has no Redo, and says why."
  (turnback-test--with-workspace ('(("a.txt" . "one\n")) (turnback-store-kind "pid"))
    (turnback-test--turn server "first" (lambda () (turnback-test--save root "a.txt" "two\n")))
    (let ((messages nil))
      (cl-letf (((symbol-function 'message)
                 (lambda (fmt &rest args) (push (apply #'format fmt args) messages))))
        (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
          (should-not (turnback-redo))))
      (should (string-match-p "Redo is not available here: ." (car messages))))))

(provide 'turnback-test)
;;; turnback-test.el ends here
