;;; turnback-ux-test.el --- ERT tests of issue 15 (and 11, 14) in turnback.el  -*- lexical-binding: t; -*-

;;; Commentary:

;; The Emacs client tells as much as the command line: user edits and
;; the keep-user-edits choice, nothing to rewind, one message per
;; outcome, a dead server, the session view, directive panels,
;; recovery, the Redo picker, fork, and the small ones.  Pure tests
;; first, then tests against the real `turnback serve' (the helpers
;; come from turnback-test.el, loaded before this file).

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'turnback)
(require 'turnback-test)
(require 'autoload)

(defmacro turnback-ux--messages (&rest body)
  "Run BODY; return the list of messages it showed, oldest first."
  (declare (indent 0))
  `(let ((shown nil))
     (cl-letf (((symbol-function 'message)
                (lambda (fmt &rest args)
                  (when fmt (push (apply #'format-message fmt args) shown))
                  (car shown))))
       ,@body)
     (nreverse shown)))

(defun turnback-ux--python ()
  "The Python of the server's environment (for preparing stores)."
  (let* ((program (executable-find (car (turnback-test--server-command))))
         (beside (and program (expand-file-name "python" (file-name-directory program)))))
    (if (and beside (file-executable-p beside)) beside "python3")))

(defun turnback-ux--python-run (root code)
  "Run Python CODE with ROOT as its first argument; fail the test on a non-zero exit."
  (with-temp-buffer
    (let ((status (call-process (turnback-ux--python) nil t nil "-c" code root)))
      (unless (eql status 0) (error "Python failed (%s): %s" status (buffer-string)))
      (buffer-string))))

;;;; Pure

(ert-deftest turnback-ux-render-user-edits-steps-and-names ()
  (let* ((candidate
          (append '(:stepSummaries (("s2.1" . "POST results to CI dashboard"))
                    :directiveNames (("d1" . "make it shout\nand loud")))
                  (plist-put (copy-sequence turnback-test--candidate) :files
                             [(:uri "file:///ws/README.md" :action "restore" :from "e7" :to "1d"
                               :externalChange :json-false :userEdit t :userEditBy "editor-save")
                              (:uri "file:///ws/a.txt" :action "restore" :from "e7" :to "1d"
                               :externalChange :json-false :userEdit :json-false)])))
         (text (substring-no-properties (turnback-render-candidate candidate "/ws/"))))
    (should (string-search "Your edits that will be overwritten\n  README.md (saved in the editor)" text))
    (should (string-search "restore  README.md  (your edit, saved in the editor)" text))
    (should-not (string-search "a.txt  (your edit" text))
    (should (string-search "Already left this machine; nothing undoes them:\n    POST results to CI dashboard" text))
    (should (string-search "“make it shout”: 1 attempt discarded" text))
    (should-not (string-search "d1" text))
    (should (string-search "k: commit, keeping your edits" text))))

(ert-deftest turnback-ux-no-keep-key-without-user-edits ()
  (let ((text (substring-no-properties
               (turnback-render-candidate
                (plist-put (copy-sequence turnback-test--candidate) :files
                           [(:uri "file:///ws/a.txt" :action "restore" :userEdit :json-false
                             :externalChange :json-false)])
                "/ws/"))))
    (should (string-search "Your edits that will be overwritten\n  none" text))
    (should-not (string-search "k: commit" text))))

(ert-deftest turnback-ux-redo-plan-does-not-say-brought-back ()
  (let ((text (substring-no-properties
               (turnback-render-redo-plan '(:headSeq 2 :turnCount 2 :files [] :gaps []) "/ws/"))))
    (should-not (string-search "Brought back" text))
    (should (string-search "Would bring back\n  2 turns (head 2)" text))))

(ert-deftest turnback-ux-mode-line-recovery-and-stopped ()
  (let ((s (turnback-mode-line-string '(:liveGaps 0 :ownership "owner" :recovery 2))))
    (should (equal (substring-no-properties s) " TB↺2"))
    (should (eq (get-text-property 0 'face s) 'turnback-mode-line-warning))
    (should (string-search "2 recovery records to resolve" (get-text-property 0 'help-echo s))))
  (let ((s (turnback-stopped-mode-line-string "killed by signal 9")))
    (should (equal (substring-no-properties s) " TB:stopped"))
    (should (string-search "turnback-start" (get-text-property 0 'help-echo s))))
  (should (string-search "1 gap (a rewind"
                         (get-text-property
                          0 'help-echo (turnback-mode-line-string
                                        '(:liveGaps 1 :gaps [(:uri nil :reason "step-scope-unknown")]))))))

(ert-deftest turnback-ux-command-map-docstring-and-autoload ()
  (let ((doc (documentation-property 'turnback-command-map 'variable-documentation)))  ; as C-h v shows it
    (should (string-search "(global-set-key (kbd \"C-c t\") 'turnback-command-map)" doc))
    (should-not (string-search "='" doc)))
  ;; The autoload cookie makes the prefix map available before the package is loaded.
  ;; The package is a few files by concern; package.el makes the autoloads of every one of them.
  (let* ((dir (make-temp-file "turnback-autoloads-" t))
         (out (expand-file-name "turnback-autoloads.el" dir))
         (here (file-name-directory (symbol-file 'turnback-start 'defun))))
    (unwind-protect
        (progn
          (let ((generated-autoload-file out) (backup-inhibited t))
            (dolist (source (directory-files here t "\\`turnback\\(-[a-z]+\\)?\\.el\\'"))
              (unless (string-suffix-p "-pkg.el" source)
                (update-file-autoloads source t out))))
          (let ((text (turnback-test--read out)))
            (should (string-search "(autoload 'turnback-command-map \"turnback\" nil t 'keymap)" text))
            (dolist (cmd '(turnback-start turnback-session turnback-recovery turnback-directive-panel
                           turnback-fork-at-response turnback-redo turnback-restore-file
                           turnback-lineage turnback-diff-turn))
              (should (string-search (format "(autoload '%s " cmd) text)))))
      (delete-directory dir t))))

(ert-deftest turnback-ux-pickers-show-their-default ()
  (let (seen)
    (cl-letf (((symbol-function 'completing-read)
               (lambda (prompt _table &rest args) (setq seen (cons prompt args)) "2: second")))
      (should (equal (turnback--choose "Rewind to before prompt: " '(("2: second" . 2) ("1: first" . 1)))
                     2)))
    (should (string-match-p "Rewind to before prompt (default 2: second): " (car seen)))))

(ert-deftest turnback-ux-render-recovery-in-words ()
  (let ((text (substring-no-properties
               (turnback-render-recovery
                '((:id "t1" :operation "rewind" :reason "disk full" :paths ["file:///ws/a.txt"]
                   :backups [(:uri "file:///ws/a.txt" :digest "1d2c3b4a5f")]))
                "/ws/" "rewind"))))
    (should (string-search "The rewind failed and was rolled back, but not completely." text))
    (should (string-search "not put back: a.txt" text))
    (should (string-search "image that puts it back: a.txt 1d2c3b4a" text)))
  (should (string-search "Nothing changed"
                         (turnback-render-recovery nil "/ws/" "redo"))))

;;;; Against the real server

(defun turnback-ux--six-turns (server root)
  "Six turns through real buffers; the sixth writes README.md."
  (dotimes (i 5)
    (turnback-test--turn server (format "turn %d" (1+ i))
                         (lambda () (turnback-test--save root "a.txt" (format "a%d\n" (1+ i))))
                         (format "answer %d" (1+ i))))
  (turnback-test--turn server "turn 6"
                       (lambda () (turnback-test--save root "README.md" "r6\n"))
                       "answer 6"))

(ert-deftest turnback-ux-user-edit-listed-and-kept ()
  "Issue 15 §1: an edit saved between turns is listed as the user's, and k keeps it."
  (turnback-test--with-workspace ('(("README.md" . "r0\n") ("a.txt" . "a0\n")))
    (let ((readme (expand-file-name "README.md" root)))
      (turnback-ux--six-turns server root)
      (turnback-test--save root "README.md" "r6\nmine\n")  ; the user, between turns, in Emacs
      (with-current-buffer (find-file-noselect readme)
        (turnback-test--choosing "^5: answer 5" (turnback-rewind-at-response)))
      (let ((text (turnback-test--confirm-text)))
        (should (string-search "Your edits that will be overwritten\n  README.md (saved in the editor)" text))
        (should (string-search "k: commit, keeping your edits" text)))
      (let* ((shown (turnback-ux--messages
                      (with-current-buffer "*turnback-confirm*"
                        (should (eq (key-binding "k") #'turnback-confirm-commit-keeping-edits))
                        (should (equal (plist-get (turnback-confirm-commit-keeping-edits) :status)
                                       "committed"))))))
        (should (equal (turnback-test--read readme) "r6\nmine\n"))
        (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "a5\n"))
        ;; r0 -> r6 by turn 6, and "mine" added right below: the two changes meet, a conflict
        (should (cl-some (lambda (m) (string-search "left README.md as it is (a conflict: resolve it by hand)" m))
                         shown))))))

(ert-deftest turnback-ux-nothing-to-rewind ()
  (turnback-test--with-workspace ('(("a.txt" . "a0\n")))
    (turnback-test--turn server "one" (lambda () (turnback-test--save root "a.txt" "a1\n")) "did one")
    (let ((shown (turnback-ux--messages
                   (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
                     (turnback-test--choosing "^1: did one" (turnback-rewind-at-response))))))
      (should-not (get-buffer "*turnback-confirm*"))
      (should (member "turnback: nothing to rewind: turn 1 is the current state" shown)))))

(ert-deftest turnback-ux-one-message-per-outcome ()
  "A commit says committed once, never cancelled; a plan over an unsaved buffer is refused first."
  (turnback-test--with-workspace ('(("a.txt" . "one\n") ("ops.py" . "x = 1\n")))
    (turnback-test--turn server "first"
                         (lambda ()
                           (turnback-test--save root "a.txt" "two\n")
                           (turnback-test--save root "ops.py" "x = 2\n")))
    (with-current-buffer (find-buffer-visiting (expand-file-name "ops.py" root))
      (goto-char (point-max)) (insert "# unsaved\n"))
    ;; Issue 23: a plan that would write a file with unsaved changes is refused before anything is
    ;; written (the client names its modified buffers: `dirty').
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (let ((err (should-error (turnback-test--choosing "^1: first" (turnback-rewind-to-prompt))
                               :type 'user-error)))
        (should (string-search "ops.py has unsaved changes in the editor; save or revert them first"
                               (cadr err)))))
    (should (equal (turnback-test--read (expand-file-name "ops.py" root)) "x = 2\n"))
    (with-current-buffer (find-buffer-visiting (expand-file-name "ops.py" root))
      (revert-buffer t t t))
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (turnback-test--choosing "^1: first" (turnback-rewind-to-prompt)))
    (let ((shown (turnback-ux--messages (turnback-confirm-commit))))
      (setq shown (cl-remove-if (lambda (m) (string-prefix-p "turnback: rewind committed (epoch" m))
                                shown))  ; the epoch notification, if it arrived meanwhile
      (should (= (length shown) 1))
      (should-not (cl-some (lambda (m) (string-search "cancelled" m)) shown))
      (should (string-prefix-p "turnback: rewind committed" (car shown))))))

(ert-deftest turnback-ux-dead-server ()
  "A confirmation made before the server died is invalidated; y offers a restart."
  (turnback-test--with-workspace ('(("a.txt" . "one\n")))
    (turnback-test--turn server "first" (lambda () (turnback-test--save root "a.txt" "two\n")))
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (turnback-test--choosing "^1: first" (turnback-rewind-to-prompt)))
    (let* ((old server)
           (line nil)
           (shown (turnback-ux--messages
                    (signal-process (turnback--process old) 'kill)
                    (turnback-test--wait (lambda () (not (turnback--live-p old))))
                    ;; The next redisplay of the mode line notices it (whenever the sentinel runs).
                    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
                      (setq line (turnback-mode-line))))))
      (should (equal (substring-no-properties line) " TB:stopped"))
      (should (assoc root turnback--stopped))
      ;; The message names a buffer that exists and says what happened.
      (let ((m (cl-find-if (lambda (m) (string-search "stopped" m)) shown)))
        (should m)
        (should (string-match "in the buffer \\(\\*[^*]+\\*\\)" m))
        (let ((buffer (get-buffer (match-string 1 m))))
          (should buffer)
          (should (string-search "the sidecar stopped" (with-current-buffer buffer (buffer-string))))))
      ;; The mode line says stopped instead of vanishing.
      (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
        (should (equal (substring-no-properties (turnback-mode-line)) " TB:stopped"))
        ;; Any command says the server is gone, never a raw jsonrpc error.
        (let ((err (should-error (turnback-request :turnback/session/log nil old) :type 'user-error)))
          (should (string-search "not running" (cadr err))))
        (let ((err (should-error (turnback-session) :type 'user-error)))
          (should (string-search "stopped (killed by signal 9); M-x turnback-start restarts it" (cadr err)))))
      ;; y on the old confirmation: gone, restart offered and accepted.
      (let ((asked nil))
        (cl-letf (((symbol-function 'y-or-n-p) (lambda (q) (setq asked q) t)))
          (with-current-buffer "*turnback-confirm*" (should-not (turnback-confirm-commit))))
        (should (string-search "is gone" asked)))
      (should-not (get-buffer "*turnback-confirm*"))
      (setq server (cdr (assoc root turnback--servers)))
      (should (turnback--live-p server))
      (should-not (eq server old))
      (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "two\n"))  ; nothing committed
      (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
        (should (equal (substring-no-properties (turnback-mode-line)) " TB"))))))

(ert-deftest turnback-ux-reconnect-says-a-turn-is-running ()
  (turnback-test--with-workspace ('(("a.txt" . "one\n")))
    (turnback--request server :turnback/turn/begin (list :kind "chat" :prompt "still going"))
    (turnback-stop server)
    (setq server nil)
    (let ((shown (turnback-ux--messages (setq server (turnback-start root)))))
      (should (cl-some (lambda (m) (string-search "turn 1 is still running (“still going”)" m)) shown)))))

(ert-deftest turnback-ux-session-view ()
  "The session view shows the log and acts on the turn at point."
  (turnback-test--with-workspace ('(("a.txt" . "one\n")))
    (turnback-test--turn server "first" (lambda () (turnback-test--save root "a.txt" "two\n")) "made two")
    (let ((turn (plist-get (turnback--request server :turnback/turn/begin
                                              (list :kind "chat" :prompt "second"))
                           :turn)))
      (turnback-test--save root "a.txt" "three\n")
      (turnback--request server :turnback/turn/step
                         (list :turn turn :kind "network-send" :scope "crossing"
                               :summary "POST results to CI dashboard"))
      (turnback--request server :turnback/turn/step (list :turn turn :kind "shell"))
      (turnback--request server :turnback/turn/settle (list :turn turn :status "settled")))
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (turnback-session))
    (with-current-buffer "*turnback-session*"
      (let ((text (buffer-substring-no-properties (point-min) (point-max))))
        (should (string-search "2 turns" text))
        (should (string-search "Turn 1 · chat · settled" text))
        (should (string-search "prompt:  first" text))
        (should (string-search "answer:  made two" text))
        (should (string-search "files:\n    a.txt  changed\n" text))
        (should-not (string-search "checkpoint" text))
        (should (string-search "POST results to CI dashboard  (scope crossing)" text))
        (should (string-search "ran a shell command (not recorded)  (scope unknown)" text))
        (should (string-search "1 gap:" text))
        (should (string-search "step-scope-unknown" text)))
      (goto-char (point-min))
      (turnback--next-item)
      (should (eql (get-text-property (point) 'turnback-item) 1))
      (turnback--next-item)
      (should (eql (get-text-property (point) 'turnback-item) 2))
      (turnback--previous-item)
      (should (eql (get-text-property (point) 'turnback-item) 1))
      (should (eq (key-binding "r") #'turnback-session-rewind-at-response))
      (turnback-session-rewind-at-response))
    (let ((text (turnback-test--confirm-text)))
      (should (string-search "Rewind to just after the response of turn 1" text))
      (should (string-search "Already left this machine; nothing undoes them:\n    POST results to CI dashboard (turn 2)" text)))
    (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
    (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "two\n"))
    ;; The view refreshes itself after the rewind made from it: no g needed.
    (with-current-buffer "*turnback-session*"
      (should (turnback-test--wait
               (lambda () (string-search "1 turn " (buffer-substring-no-properties (point-min) (point-max)))))))
    (kill-buffer "*turnback-session*")))

(ert-deftest turnback-ux-directive-panel ()
  "The panel shows request, state, attempts and answers; its actions begin, edit and rewind."
  (turnback-test--with-workspace ('(("a.txt" . "one\nanchor\nthree\n")))
    (let ((a (expand-file-name "a.txt" root)) id)
      (with-current-buffer (find-file-noselect a)
        (goto-char (point-min)) (forward-line 1)
        (setq id (plist-get (turnback-directive-add "make it shout\nin capitals") :id))
        (should (turnback-test--wait (lambda () (turnback-directive-overlays))))
        (turnback-directive-panel))
      (with-current-buffer "*turnback-directive*"
        (let ((text (buffer-substring-no-properties (point-min) (point-max))))
          (should (string-search (format "Directive %s: make it shout" id) text))
          (should (string-search "state:   ready" text))
          (should (string-search "anchor:  a.txt:2" text))
          (should (string-search "in capitals" text))
          (should (string-search "none yet" text)))
        ;; b: begin an attempt as a directive turn.
        (let ((turn (turnback-directive-panel-begin "make it shout")))
          (should (equal (plist-get (aref (plist-get (turnback--request server :turnback/session/log) :turns) 0)
                                    :kind)
                         "directive"))
          (with-current-buffer (find-buffer-visiting a)
            (goto-char (point-max)) (insert "SHOUT\n") (save-buffer))
          (turnback--request server :turnback/directive/record
                             (list :directiveId id :turn turn :answer "added SHOUT"))
          (turnback--request server :turnback/turn/settle (list :turn turn :status "settled")))
        ;; The directives notification redraws the panel.
        (should (turnback-test--wait
                 (lambda () (string-search "answer:   added SHOUT"
                                           (buffer-substring-no-properties (point-min) (point-max))))))
        (should (string-search "state:   answered" (buffer-substring-no-properties (point-min) (point-max))))
        ;; e: edit the request.
        (turnback-directive-panel-edit "make it whisper")
        (should (string-search "make it whisper" (buffer-substring-no-properties (point-min) (point-max))))
        ;; r on the attempt: rewind before it.
        (goto-char (point-min))
        (turnback--next-item)
        (should (eql (get-text-property (point) 'turnback-item) 1))
        (turnback-directive-panel-rewind))
      (should (string-search "before the attempt of turn 1" (turnback-test--confirm-text)))
      (should (equal (plist-get (turnback-confirm-commit) :status) "committed"))
      (should (equal (turnback-test--read a) "one\nanchor\nthree\n"))
      (kill-buffer "*turnback-directive*"))))

(ert-deftest turnback-ux-turn-begin-starts-a-directive-turn ()
  (turnback-test--with-workspace ('(("a.txt" . "one\nanchor\n")))
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (goto-char (point-min)) (forward-line 1)
      (let ((id (plist-get (turnback-directive-add "do the thing") :id)))
        (should (turnback-test--wait (lambda () (turnback-directive-at-point))))
        (let ((current-prefix-arg '(4)))
          (cl-letf (((symbol-function 'read-string) (lambda (&rest _) "do the thing")))
            (call-interactively #'turnback-turn-begin)))
        (let ((turn (aref (plist-get (turnback--request server :turnback/session/log) :turns) 0)))
          (should (equal (plist-get turn :kind) "directive"))
          (should (equal (plist-get turn :directiveId) id)))))))

(ert-deftest turnback-ux-recovery-list-retry-dismiss ()
  "Pending recovery records: count in the mode line, paths and images listed, Retry and Dismiss."
  (skip-unless (turnback-test--server-available-p))
  (let ((root (file-name-as-directory (file-truename (make-temp-file "turnback-ert-" t))))
        (turnback-server-command (turnback-test--server-command))
        (server nil))
    (unwind-protect
        (progn
          (turnback-test--write (expand-file-name "a.txt" root) "damaged\n")
          (turnback-test--write (expand-file-name "b.txt" root) "b\n")
          (turnback-ux--python-run root "
import sys
from turnback.workbench import Workbench
from turnback.travel import transaction
wb = Workbench.open(sys.argv[1])
try:
    good = wb.store.objects.put(b'as it was\\n')
    left = wb.store.objects.put(b'damaged\\n')  # what the failed rollback left: retry may overwrite it
    for rid, op, rel, why in (('txn-a', 'rewind', 'a.txt', 'a.txt could not be written back: disk full'),
                              ('txn-b', 'redo', 'b.txt', 'b.txt could not be written back')):
        record = transaction.recovery_record(rid, op, [{'rel': rel, 'backup': good, 'left': left}], why)
        assert transaction.write_recovery(wb.store, record)
finally:
    wb.close()
")
          (setq server (turnback-start root))
          (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
            (should (equal (substring-no-properties (turnback-mode-line)) " TB↺2"))
            (turnback-recovery))
          (with-current-buffer "*turnback-recovery*"
            (let ((text (buffer-substring-no-properties (point-min) (point-max))))
              (should (string-search "2 recovery records" text))
              (should (string-search "txn-a (rewind" text))
              (should (string-search "a.txt could not be written back: disk full" text))
              (should (string-search "not put back: a.txt" text))
              (should (string-search "image that puts it back: a.txt " text)))
            (should (equal (get-text-property (point) 'turnback-item) "txn-a"))
            (let ((shown (turnback-ux--messages (turnback-recovery-retry))))
              (should (member "turnback: recovery txn-a retried: its files are put back" shown)))
            (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "as it was\n"))
            (should (equal (get-text-property (point) 'turnback-item) "txn-b"))
            (let ((shown (turnback-ux--messages (turnback-recovery-dismiss))))
              (should (member "turnback: recovery txn-b dismissed: you took care of it" shown)))
            (should (equal (turnback-test--read (expand-file-name "b.txt" root)) "b\n"))
            (should (string-search "nothing to recover" (buffer-substring-no-properties (point-min) (point-max)))))
          (should (turnback-test--wait
                   (lambda () (eql (plist-get (turnback--status server) :recovery) 0)))))
      (when server (turnback-stop server))
      (when (get-buffer "*turnback-recovery*") (kill-buffer "*turnback-recovery*"))
      (dolist (b (buffer-list))
        (with-current-buffer b
          (when (and buffer-file-name (file-in-directory-p buffer-file-name root))
            (set-buffer-modified-p nil) (kill-buffer b))))
      (delete-directory root t))))

(ert-deftest turnback-ux-redo-picker-offers-what-a-rewind-left-behind ()
  (turnback-test--with-workspace ('(("a.txt" . "a0\n")))
    (dolist (n '(1 2 3))
      (turnback-test--turn server (format "turn %d" n)
                           (lambda () (turnback-test--save root "a.txt" (format "a%d\n" n)))))
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (turnback-test--choosing "^1: " (turnback-rewind-at-response)))
    (turnback-confirm-commit)
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (turnback-test--choosing "^turns 2–3 back"
        (turnback-redo)
        (let ((labels (car offered)))
          ;; What the rewind left behind, newest first, each by what it brings back (the turns,
          ;; the files, the time); not the current state's 1-turn ancestor; the whole history one
          ;; choice away.
          (should (string-match-p "^turns 2–3 back, last “turn 3”; a.txt; saved [0-9-]+ [0-9:]+  (head [0-9]+)$"
                                  (nth 0 labels)))
          (should (string-match-p "^turn 2 back, last “turn 2”; a.txt; saved " (nth 1 labels)))
          (should-not (cl-some (lambda (l) (string-match-p "after turn 1" l)) labels))
          (should (equal (car (last labels)) turnback--all-states-choice)))))
    (should (string-search "Would bring back\n  3 turns" (turnback-test--confirm-text)))
    (turnback-confirm-cancel)
    (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
      (let ((answers (list turnback--all-states-choice "as it was after turn 1")) (offered nil))
        (cl-letf (((symbol-function 'completing-read)
                   (lambda (_prompt table &rest _)
                     (let ((all (all-completions "" table)) (want (pop answers)))
                       (push all offered)
                       (cl-find-if (lambda (c) (string-search want c)) all)))))
          (turnback-redo))
        (should (cl-some (lambda (l) (string-search "(earlier on this line)" l)) (car offered)))))
    (should (string-search "Would bring back\n  1 turn" (turnback-test--confirm-text)))))

(ert-deftest turnback-ux-fork-at-response ()
  "Fork at this response, from the session view (the server side is issue 14's)."
  (turnback-test--with-workspace ('(("a.txt" . "a0\n")))
    (turnback-test--turn server "one" (lambda () (turnback-test--save root "a.txt" "a1\n")) "did one")
    (turnback-test--turn server "two" (lambda () (turnback-test--save root "a.txt" "a2\n")) "did two")
    (progn
      (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
        (turnback-session))
      (with-current-buffer "*turnback-session*"
        (goto-char (point-min)) (turnback--next-item)
        (should (eql (get-text-property (point) 'turnback-item) 1))
        (turnback-session-fork))
      (should (string-search "Fork at the response of turn 1" (turnback-test--confirm-text)))
      (let* ((result nil)
             (shown (turnback-ux--messages (setq result (turnback-confirm-commit)))))
        (should (equal (plist-get result :status) "forked"))
        (should (turnback--get result :branch :sessionId))
        (should (cl-some (lambda (m) (string-prefix-p "turnback: forked at turn 1: the new session is" m))
                         shown))
        (let ((sessions (turnback--list (plist-get (turnback--request server :turnback/session/list)
                                                   :sessions))))
          (should (cl-some (lambda (s) (turnback--true-p (plist-get s :frozen))) sessions))))
      (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "a1\n"))
      (should (equal (with-current-buffer (find-buffer-visiting (expand-file-name "a.txt" root))
                       (buffer-string))
                     "a1\n"))  ; the buffer follows the fork's rewind
      (kill-buffer "*turnback-session*"))))

(ert-deftest turnback-ux-fork-lists-and-keeps-your-edits ()
  "The fork's confirmation lists the files and your own edits; k forks and leaves the edits."
  (turnback-test--with-workspace ('(("a.txt" . "a0\n")))
    (turnback-test--turn server "one" (lambda () (turnback-test--save root "a.txt" "a1\n")) "did one")
    (turnback-test--turn server "two" (lambda () (turnback-test--save root "a.txt" "a2\n")
                                        (turnback-test--save root "notes.md" "n2\n"))
                         "did two")
    (turnback-test--save root "notes.md" "n2\nmine\n")  ; the user, between turns, in Emacs
    (let ((notes (expand-file-name "notes.md" root)))
      (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
        (turnback-test--choosing "^1: did one" (turnback-fork-at-response)))
      (let ((text (turnback-test--confirm-text)))
        (should (string-search "Fork at the response of turn 1" text))
        (should (string-match-p "restore +a\\.txt" text))
        (should (string-search "Your edits that will be overwritten\n  notes.md (saved in the editor)" text))
        (should (string-search "k: fork, keeping your edits" text)))
      (let* ((result nil)
             (shown (turnback-ux--messages
                      (with-current-buffer "*turnback-confirm*"
                        (should (eq (key-binding "k") #'turnback-confirm-commit-keeping-edits))
                        (setq result (turnback-confirm-commit-keeping-edits))))))
        (should (equal (plist-get result :status) "forked"))
        (should (equal (turnback-test--read notes) "n2\nmine\n"))
        (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "a1\n"))
        ;; notes.md did not exist at turn 1 and you edited it since: kept, as a conflict
        (should (cl-some (lambda (m) (string-search "left notes.md as it is (a conflict" m)) shown))))))

(ert-deftest turnback-ux-agent-resume-command-shown ()
  "A committed rewind of a Claude Code session says the command that resumes the agent there."
  (let ((cmd "claude --resume 3f1c --resume-session-at a4"))
    (should (string-match-p (regexp-quote cmd)
                            (turnback--agent-resume-note
                             (list :status "committed" :agentResume (list :agent "claude-code" :command cmd)))))
    (should-not (turnback--agent-resume-note (list :status "committed")))
    (should (equal "no turn survives"
                   (turnback--agent-resume-note
                    (list :agentResume (list :command nil :note "no turn survives")))))))

(ert-deftest turnback-ux-recovered-notification-says-what-was-done ()
  "A `turnback/recovered' notification is kept on the server and its sentence shown."
  (let* ((pipe (make-pipe-process :name "turnback-test-recovered" :noquery t))
         (server (make-instance 'turnback-server :root "/tmp/" :process pipe))
         (said nil)
         (turnback-recovered-functions (list (lambda (p) (push p said))))
         (params '(:transactions [(:id "59cb" :operation "rewind" :action "rolled-back" :files 120)]
                   :forks [] :message "An interrupted rewind (59cb) was rolled back")))
    (cl-letf (((symbol-function 'message) (lambda (fmt &rest args) (push (apply #'format fmt args) said))))
      (apply #'turnback-handle-notification server 'turnback/recovered params))
    (should (equal (plist-get (turnback--recovered server) :message)
                   "An interrupted rewind (59cb) was rolled back"))
    (should (member "turnback: An interrupted rewind (59cb) was rolled back" said))
    (should (cl-find-if (lambda (x) (and (listp x) (plist-get x :transactions))) said))
    (delete-process pipe)))

;; The same notification from the real server: a workspace left by an owner killed in the middle of
;; a rewind (editor-clients/fixtures/interrupted_rewind.py, run by the Python that runs the server)
;; is rolled back when Emacs starts the server, which says so.
(defun turnback-ux--server-python ()
  "The Python next to the server program (a virtual environment's), or nil."
  (let* ((program (executable-find (car (turnback-test--server-command))))
         (python (and program (expand-file-name "python" (file-name-directory (file-truename program))))))
    (and python (file-executable-p python) python)))

(defun turnback-ux--interrupt-a-rewind (root)
  "Leave ROOT as a rewind killed half-way leaves it; return the transaction's id."
  (let ((fixture (expand-file-name "../fixtures/interrupted_rewind.py"
                                   (file-name-directory (locate-library "turnback")))))
    (with-temp-buffer
      (unless (zerop (call-process (turnback-ux--server-python) nil t nil fixture root "20"))
        (error "interrupted_rewind.py failed: %s" (buffer-string)))
      (car (last (split-string (buffer-string) "\n" t))))))

(ert-deftest turnback-ux-recovered-from-the-real-server-when-emacs-opens-the-store ()
  "Starting the server on a store a killed rewind left: every file back, and `turnback/recovered' said it."
  (skip-unless (turnback-ux--server-python))
  (let ((said nil))
    (turnback-test--with-workspace
        (nil (interrupted (turnback-ux--interrupt-a-rewind root))
             (turnback-recovered-functions (list (lambda (p) (push p said)))))
      (should (string-match-p "\\`[0-9a-f]\\{32\\}\\'" interrupted))
      (should (turnback-test--wait (lambda () (turnback--recovered server)) 30))
      (let* ((params (turnback--recovered server))
             (txn (aref (plist-get params :transactions) 0)))
        (should (equal (plist-get txn :id) interrupted))
        (should (equal (plist-get txn :action) "rolled-back"))
        (should (string-match-p "was rolled back" (plist-get params :message)))
        (should (equal said (list params))))
      (dotimes (i 20)
        (should (equal (turnback-test--read (expand-file-name (format "f/%03d.txt" i) root))
                       (format "two %d\n" i))))
      (should-not (directory-files (expand-file-name "f" root) nil "tbtmp")))))

(provide 'turnback-ux-test)
;;; turnback-ux-test.el ends here
