;;; turnback-test-bounds.el --- every ERT test of turnback.el, bounded in time  -*- lexical-binding: t; -*-

;;; Commentary:

;; Loaded after the tests (run-tests.sh): each test's body runs under
;; `with-timeout', so a test that hangs (a request waiting for ever, a
;; frozen refresh) fails with a message instead of stalling the run.
;; The bound is TURNBACK_ERT_TEST_TIMEOUT seconds (default 120).  A hang
;; in a loop that never lets timers run is caught by the `timeout' that
;; bounds the whole run (.ci/emacs-matrix.sh).

;;; Code:

(require 'ert)

(defconst turnback-test-bounds-seconds
  (let ((env (getenv "TURNBACK_ERT_TEST_TIMEOUT")))
    (if (and env (string-match-p "\\`[0-9]+\\'" env)) (string-to-number env) 120))
  "Seconds a test may take before it fails as hung.")

(defun turnback-test-bounds-wrap (test)
  "Make TEST's body fail once it runs longer than `turnback-test-bounds-seconds'."
  (let ((body (ert-test-body test))
        (name (ert-test-name test)))
    (setf (ert-test-body test)
          (lambda ()
            (with-timeout (turnback-test-bounds-seconds
                           (ert-fail (list (format "%s hung: no end after %s seconds"
                                                   name turnback-test-bounds-seconds))))
              (funcall body))))))

(mapc #'turnback-test-bounds-wrap (ert-select-tests t t))

(provide 'turnback-test-bounds)
;;; turnback-test-bounds.el ends here
