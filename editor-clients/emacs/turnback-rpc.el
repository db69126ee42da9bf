;;; turnback-rpc.el --- turnback.el: requests that wait, and requests that never do  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The turnback authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; Issue 40: with jsonrpc 1.0.25 a `jsonrpc-request' sent from a timer
;; while another one waited lost the outer answer, and Emacs froze
;; after a rewind or a Redo.  So there are two ways to ask the sidecar:
;; - `turnback--request', for the commands the user runs: it waits, in
;;   a loop of its own over `jsonrpc-async-request', and ends with a
;;   clear `user-error' when the sidecar dies, refuses or never answers;
;; - `turnback--async' and `turnback--fetch', for timers, process
;;   filters and notification handlers: they never wait; a stop cancels
;;   them (answers to what was sent before it are dropped).
;; Part of turnback.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'jsonrpc)
(require 'turnback)

(defun turnback--not-running (server &optional during)
  "Signal that SERVER's sidecar is gone (DURING: the method it did not answer)."
  (turnback--reap)
  (user-error "turnback: the sidecar for %s %s (%s); M-x turnback-start restarts it"
              (abbreviate-file-name (turnback--root server))
              (if during (format "stopped before it answered %s" (turnback--method-name during))
                "is not running")
              (or (cdr (assoc (turnback--root server) turnback--stopped)) "it stopped")))

(defun turnback--method-name (method)
  "METHOD (a keyword or a symbol) as the contract spells it."
  (string-remove-prefix ":" (format "%s" method)))

(defun turnback--error-words (error)
  "The message and stable code of a JSON-RPC ERROR object, as a string."
  (format "%s [%s]" (or (plist-get error :message) "request failed")
          (or (plist-get (plist-get error :data) :code) (plist-get error :code))))

(defun turnback--wait-for (server method params timeout)
  "Send METHOD with PARAMS to SERVER; wait at most TIMEOUT seconds for the answer.
The wait is a loop of its own over an asynchronous request, so an
answer is never lost to another request waiting meanwhile (jsonrpc's
own `jsonrpc-request' nests badly, bug#67945).  Return (ok RESULT),
\(error ERROR-OBJECT), (timeout) or (gone): the process ended."
  (let ((outcome nil) (gone-at nil))
    (jsonrpc-async-request server method (or params (make-hash-table))
                           :success-fn (lambda (result) (setq outcome (list 'ok result)))
                           :error-fn (lambda (error) (setq outcome (list 'error error)))
                           :timeout-fn (lambda () (setq outcome (list 'timeout)))
                           :timeout timeout)
    (while (not outcome)
      (accept-process-output nil 0.05)
      ;; The sentinel fails every pending request; if Emacs runs it late, do not wait for it.
      (unless (or outcome (turnback--live-p server))
        (if (null gone-at) (setq gone-at (float-time))
          (when (> (- (float-time) gone-at) 1) (setq outcome (list 'gone))))))
    (if (and (eq (car outcome) 'error) (not (turnback--live-p server)))
        (list 'gone)
      outcome)))

(defun turnback--request (server method &optional params)
  "Send METHOD with PARAMS to SERVER, wait for the answer and return the result.
For commands the user runs, never from a timer, a process filter or a
notification handler (those use `turnback--async').  A JSON-RPC error
becomes a `user-error' naming its code; a sidecar that is gone or that
never answers (`turnback-request-timeout'), a `user-error' that says so."
  (unless (turnback--live-p server) (turnback--not-running server))
  (pcase (turnback--wait-for server method params turnback-request-timeout)
    (`(ok ,result) result)
    (`(timeout)
     (user-error "turnback: the sidecar for %s did not answer %s in %s seconds (turnback-request-timeout); \
its messages are in the buffer %s.  M-x turnback-stop, then M-x turnback-start, restarts it"
                 (abbreviate-file-name (turnback--root server)) (turnback--method-name method)
                 turnback-request-timeout
                 (buffer-name (jsonrpc-events-buffer server))))
    (`(error ,error) (user-error "turnback: %s" (turnback--error-words error)))
    (_ (turnback--not-running server method))))

(defun turnback--async (server method params on-result &optional on-failure)
  "Send METHOD with PARAMS to SERVER and return at once: never wait.
ON-RESULT is called with the result, ON-FAILURE (when given) with a
sentence saying why there is none; neither is called once SERVER was
stopped (a stop cancels what was pending).  Return nil when SERVER is
not running (nothing is sent)."
  (when (turnback--live-p server)
    (let ((generation (turnback--generation server)))
      (cl-incf (turnback--pending server))
      (cl-flet ((settle (fn &rest args)
                  (cl-decf (turnback--pending server))
                  (when (and fn (= generation (turnback--generation server)) (turnback--live-p server))
                    (apply fn args))))
        (jsonrpc-async-request
         server method (or params (make-hash-table))
         :success-fn (lambda (result) (settle on-result result))
         :error-fn (lambda (error) (settle on-failure (turnback--error-words error)))
         :timeout-fn (lambda () (settle on-failure (format "no answer to %s in %s seconds"
                                                           method turnback-request-timeout)))
         :timeout turnback-request-timeout))
      t)))

(defun turnback--fetch (server requests callback)
  "Send every (METHOD PARAMS) of REQUESTS to SERVER at once, never waiting.
When all are answered, call CALLBACK with their results in order (nil
for one that failed; its reason goes to the events buffer).  Nothing
is called once SERVER is stopped."
  (let* ((count (length requests))
         (results (make-vector count nil))
         (left count))
    (when (zerop count) (funcall callback))
    (cl-loop for (method params) in requests
             for i from 0
             do (let ((i i) (method method))
                  (turnback--async server method params
                                   (lambda (result)
                                     (aset results i result)
                                     (when (zerop (cl-decf left)) (apply callback (append results nil))))
                                   (lambda (why)
                                     (turnback--log server (format "%s failed: %s" method why))
                                     (when (zerop (cl-decf left)) (apply callback (append results nil)))))))))

(defun turnback--log (server line)
  "Add LINE, from turnback.el itself, to SERVER's events buffer."
  (with-current-buffer (jsonrpc-events-buffer server)
    (let ((inhibit-read-only t))
      (save-excursion
        (goto-char (point-max))
        (insert (format "[turnback.el] %s\n" line))))))

(provide 'turnback-rpc)
;;; turnback-rpc.el ends here
