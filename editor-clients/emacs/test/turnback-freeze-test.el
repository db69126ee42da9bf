;;; turnback-freeze-test.el --- turnback.el never freezes Emacs, whatever the server does  -*- lexical-binding: t; -*-

;;; Commentary:

;; Issue 40: with jsonrpc 1.0.25 (Emacs 30), a rewind or a Redo froze
;; Emacs: the epoch and rewound handlers and the view refresh sent
;; synchronous requests from timers while the commit's request waited,
;; and the commit's answer was lost in that nesting.  These tests put
;; the real server behind test/fixtures/rpc_proxy.py, which holds the
;; commit's answer back while the server's notifications pass: the
;; refreshes they start run while the commit waits.  Every commit must
;; return, no request may wait inside another one's wait, and the views
;; must show the new state.  Then the bad input: a server that dies
;; during a commit, one that never answers, a stop in the middle of a
;; refresh, a start that fails: a clear message, no process left, no
;; file written.

;;; Code:

(require 'ert)
(require 'cl-lib)
(require 'turnback)
(require 'turnback-test)

(defconst turnback-freeze--proxy
  (expand-file-name "fixtures/rpc_proxy.py"
                    (file-name-directory (or load-file-name buffer-file-name)))
  "The proxy that delays, swallows or kills on chosen requests.")

(defun turnback-freeze--python ()
  "A Python for the proxy (the server's own when it has one)."
  (let* ((program (executable-find (car (turnback-test--server-command))))
         (beside (and program (expand-file-name "python" (file-name-directory (file-truename program))))))
    (if (and beside (file-executable-p beside)) beside (executable-find "python3"))))

(defun turnback-freeze--proxied (&rest options)
  "The server command behind the proxy with OPTIONS."
  (append (list (turnback-freeze--python) turnback-freeze--proxy) options
          (list "--") (turnback-test--server-command)))

(defvar turnback-freeze--depth 0
  "How many `turnback--request's are waiting, one inside another.")

(defvar turnback-freeze--nested nil
  "Methods of the requests sent while another request waited.")

(defun turnback-freeze--count-nesting (request server method &rest args)
  "Around REQUEST: note METHOD when another request of SERVER is waiting."
  (when (> turnback-freeze--depth 0) (push method turnback-freeze--nested))
  (let ((turnback-freeze--depth (1+ turnback-freeze--depth)))
    (apply request server method args)))

(defmacro turnback-freeze--watching (&rest body)
  "Run BODY noting every request sent while another one waits."
  (declare (indent 0))
  `(progn
     (setq turnback-freeze--nested nil)
     (advice-add 'turnback--request :around #'turnback-freeze--count-nesting)
     (unwind-protect (progn ,@body)
       (advice-remove 'turnback--request #'turnback-freeze--count-nesting))))

(defmacro turnback-freeze--bounded (seconds &rest body)
  "Run BODY; fail the test as frozen when it has not returned after SECONDS."
  (declare (indent 1))
  `(with-timeout (,seconds (ert-fail (format "froze: no return after %s seconds" ,seconds)))
     ,@body))

(defun turnback-freeze--serve-processes (root)
  "Live processes of a sidecar (or the proxy) whose working directory is ROOT."
  (cl-loop for pid in (list-system-processes)
           for attrs = (process-attributes pid)
           for args = (or (alist-get 'args attrs) "")
           when (and (string-match-p "turnback\\|rpc_proxy" args)
                     (string-match-p "serve" args)
                     (not (member (alist-get 'state attrs) '("Z" "X")))
                     (let ((cwd (ignore-errors (file-truename (format "/proc/%d/cwd" pid)))))
                       (and cwd (file-in-directory-p cwd root))))
           collect pid))

(defun turnback-freeze--no-orphans (root)
  "Non-nil when no sidecar process of ROOT is left (waiting a little for them to end)."
  (turnback-test--wait (lambda () (null (turnback-freeze--serve-processes root))) 10))

(defun turnback-freeze--view-text ()
  (with-current-buffer "*turnback-session*" (buffer-substring-no-properties (point-min) (point-max))))

(defun turnback-freeze--goto-turn (n)
  "Put point of the session view on turn N."
  (with-current-buffer "*turnback-session*"
    (goto-char (or (text-property-any (point-min) (point-max) 'turnback-item n)
                   (ert-fail (format "no turn %s in the view" n))))))

(defun turnback-freeze--two-turns (server root)
  "Turns 1 and 2 of SERVER, writing a.txt in ROOT; open the session view."
  (turnback-test--turn server "one" (lambda () (turnback-test--save root "a.txt" "a1\n")) "did one")
  (turnback-test--turn server "two" (lambda () (turnback-test--save root "a.txt" "a2\n")) "did two")
  (with-current-buffer (find-file-noselect (expand-file-name "a.txt" root))
    (turnback-session)))

(defun turnback-freeze--rewind-shown (server root)
  "Two turns of SERVER in ROOT, then the confirmation of a rewind to turn 1, from the view."
  (turnback-freeze--two-turns server root)
  (turnback-freeze--goto-turn 1)
  (with-current-buffer "*turnback-session*" (turnback-session-rewind-at-response)))

(ert-deftest turnback-freeze-rewind-redo-fork-from-the-session-view ()
  "Rewind, Redo and fork from the session view while notifications and refreshes arrive
during each commit's wait: every commit returns, nothing waits inside another wait, and the
view follows."
  (skip-unless (turnback-freeze--python))
  (turnback-test--with-workspace
      ('(("a.txt" . "a0\n"))
       (turnback-server-command (turnback-freeze--proxied "--delay" "turnback/rewind/commit=1.5"
                                                          "--delay" "turnback/redo/commit=1.5"
                                                          "--delay" "turnback/fork/confirm=1.5")))
    (turnback-freeze--two-turns server root)
    (turnback-freeze--watching
      ;; Rewind to just after turn 1's response, from the view.
      (turnback-freeze--goto-turn 1)
      (with-current-buffer "*turnback-session*" (turnback-session-rewind-at-response))
      (let ((epoch (turnback--epoch server)))
        (should (equal (plist-get (turnback-freeze--bounded 30 (turnback-confirm-commit)) :status)
                       "committed"))
        ;; The notifications came while the commit waited, not after it.
        (should-not (eq (turnback--epoch server) epoch)))
      (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "a1\n"))
      (should (turnback-test--wait (lambda () (string-search "1 turn " (turnback-freeze--view-text)))))
      ;; Redo from the view brings turn 2 back.
      (turnback-test--choosing "^turn 2 back"
        (with-current-buffer "*turnback-session*" (turnback-session-redo)))
      (should (equal (plist-get (turnback-freeze--bounded 30 (turnback-confirm-commit)) :status)
                     "committed"))
      (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "a2\n"))
      (should (turnback-test--wait (lambda () (string-search "2 turns" (turnback-freeze--view-text)))))
      ;; Fork at turn 1, from the view.
      (turnback-freeze--goto-turn 1)
      (with-current-buffer "*turnback-session*" (turnback-session-fork))
      (should (equal (plist-get (turnback-freeze--bounded 30 (turnback-confirm-commit)) :status) "forked"))
      (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "a1\n"))
      (should (turnback-test--wait (lambda () (string-search "1 turn " (turnback-freeze--view-text)))))
      (should (equal (with-current-buffer (find-buffer-visiting (expand-file-name "a.txt" root))
                       (buffer-string))
                     "a1\n"))
      (should (turnback-test--wait (lambda () (zerop (turnback--pending server)))))
      (should-not turnback-freeze--nested))
    (kill-buffer "*turnback-session*")))

(ert-deftest turnback-freeze-server-dies-during-a-commit ()
  "The server dies when the commit arrives: a clear message, nothing written, no process left."
  (skip-unless (turnback-freeze--python))
  (turnback-test--with-workspace
      ('(("a.txt" . "a0\n"))
       (turnback-server-command (turnback-freeze--proxied "--die-on" "turnback/rewind/commit")))
    (turnback-freeze--rewind-shown server root)
    (let ((err (turnback-freeze--bounded 30 (should-error (turnback-confirm-commit) :type 'user-error))))
      (should (string-search "stopped before it answered turnback/rewind/commit" (cadr err)))
      (should (string-search "M-x turnback-start restarts it" (cadr err))))
    (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "a2\n"))
    (should (equal (with-current-buffer (find-buffer-visiting (expand-file-name "a.txt" root)) (buffer-string))
                   "a2\n"))
    (should-not (turnback--live-p server))
    (should (assoc root turnback--stopped))
    (should (turnback-freeze--no-orphans root))
    (kill-buffer "*turnback-session*")))

(ert-deftest turnback-freeze-server-never-answers ()
  "A commit the server never answers ends at `turnback-request-timeout' with a clear message;
nothing is written and the stop leaves no process."
  (skip-unless (turnback-freeze--python))
  (turnback-test--with-workspace
      ('(("a.txt" . "a0\n"))
       (turnback-server-command (turnback-freeze--proxied "--swallow" "turnback/rewind/commit")))
    (turnback-freeze--rewind-shown server root)
    (let* ((turnback-request-timeout 3)
           (err (turnback-freeze--bounded 30 (should-error (turnback-confirm-commit) :type 'user-error))))
      (should (string-search "did not answer turnback/rewind/commit in 3 seconds" (cadr err)))
      (should (string-search "M-x turnback-stop, then M-x turnback-start" (cadr err))))
    (should (equal (turnback-test--read (expand-file-name "a.txt" root)) "a2\n"))
    ;; Emacs is free: the sidecar still answers the next request.
    (should (plist-get (turnback--request server :turnback/session/info) :sessionId))
    (turnback-freeze--bounded 30 (turnback-stop server))
    (should (turnback-freeze--no-orphans root))
    (kill-buffer "*turnback-session*")))

(ert-deftest turnback-freeze-stop-in-the-middle-of-a-refresh ()
  "A stop while a view's refresh waits for its answers cancels it: the view is left as it was,
nothing is signalled, no process is left."
  (skip-unless (turnback-freeze--python))
  (turnback-test--with-workspace
      ('(("a.txt" . "a0\n"))
       (turnback-server-command (turnback-freeze--proxied "--delay" "turnback/session/log=2")))
    (turnback-freeze--two-turns server root)
    (let ((before (turnback-freeze--view-text))
          (drawn 0))
      (cl-letf (((symbol-function 'turnback--session-draw)
                 (let ((draw (symbol-function 'turnback--session-draw)))
                   (lambda (&rest args) (cl-incf drawn) (apply draw args)))))
        (turnback--after-change server)
        (should (turnback-test--wait (lambda () (> (turnback--pending server) 0)) 5))
        (turnback-freeze--bounded 30 (turnback-stop server))
        (should-not (turnback--live-p server))
        (sleep-for 2.5)               ; past the moment the held answer would have come
        (should (= drawn 0))
        (should (equal (turnback-freeze--view-text) before))
        (should (zerop (turnback--pending server))))
      (should (turnback-freeze--no-orphans root)))
    (kill-buffer "*turnback-session*")))

(ert-deftest turnback-freeze-start-that-fails-kills-what-it-started ()
  "A server that exits at once, and one that never answers `initialize': each start fails with
the reason, and leaves no process behind."
  (skip-unless (turnback-freeze--python))
  (let ((root (file-name-as-directory (file-truename (make-temp-file "turnback-ert-" t)))))
    (unwind-protect
        (progn
          (let* ((turnback-server-command (append (turnback-test--server-command) '("--no-such-option")))
                 (err (turnback-freeze--bounded 30 (should-error (turnback-start root) :type 'user-error))))
            (should (string-search "the server did not start" (cadr err)))
            (should (string-search "unrecognized arguments: --no-such-option" (cadr err))))
          (should (turnback-freeze--no-orphans root))
          (let* ((turnback-server-command (turnback-freeze--proxied "--swallow" "initialize"))
                 (turnback-connect-timeout 3)
                 (err (turnback-freeze--bounded 30 (should-error (turnback-start root) :type 'user-error))))
            (should (string-search "the server did not start" (cadr err)))
            (should (string-search "did not answer initialize in 3 seconds" (cadr err))))
          (should (turnback-freeze--no-orphans root))
          (should-not (assoc root turnback--servers)))
      (delete-directory root t))))

(ert-deftest turnback-freeze-start-and-stop-show-no-warning ()
  "A start and a stop raise no warning (jsonrpc 1.0.25 warned about
`:events-buffer-scrollback-size' in a *Warnings* window at every start)."
  (let ((warned nil))
    (cl-letf (((symbol-function 'display-warning) (lambda (&rest args) (push args warned))))
      (turnback-test--with-workspace ('(("a.txt" . "a\n")))
        (should (plist-get (turnback--request server :turnback/session/info) :sessionId))))
    (should-not warned)))

(provide 'turnback-freeze-test)
;;; turnback-freeze-test.el ends here
