;;; turnback-diff.el --- turnback.el: per-turn diffs in diff-mode and ediff  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The turnback authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; What a turn changed, or your own edit between turns, from the
;; sidecar's `turnback/diff' (unified diffs headed in words, "before
;; turn 3" / "after turn 3") in a read-only `diff-mode' buffer, and the
;; two images of one change side by side in ediff (`turnback/image/read').
;; Part of turnback.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'diff-mode)
(require 'turnback)

(defun turnback-render-diff (result root)
  "The text of a `turnback/diff' RESULT, relative to ROOT: a heading per
turn and per stretch of your own edits, a line per file in words, then
its unified diff."
  (let ((heading nil) (out nil))
    (dolist (c (turnback--list (plist-get result :changes)))
      (let ((now (if (equal (plist-get c :source) "turn")
                     (format "Turn %s “%s”:" (plist-get c :turn)
                             (turnback--one-line (plist-get c :prompt) 60))
                   (let ((after (or (plist-get c :afterTurn) 0)))
                     (if (zerop after) "Your own edits before turn 1:"
                       (format "Your own edits after turn %s, before turn %s:" after (1+ after)))))))
        (unless (equal now heading)
          (push (concat (if out "\n" "") (propertize now 'face 'turnback-confirm-heading) "\n") out)
          (setq heading now))
        (push (format "  %s: %s%s\n" (turnback--display-path (plist-get c :uri) root)
                      (or (cdr (assoc (plist-get c :status) turnback--file-words)) (plist-get c :status))
                      (cond ((plist-get c :gap)
                             (format " (%s%s)" (turnback--get c :gap :reason)
                                     (if (turnback--get c :gap :detail)
                                         (concat ", " (turnback--get c :gap :detail)) "")))
                            ((turnback--true-p (plist-get c :binary)) ", a binary file (no line diff; e compares it)")
                            ((turnback--true-p (plist-get c :tooLargeToDiff)) ", too large to diff here (e compares it)")
                            ((plist-get c :added)
                             (format ", %s added, %s removed" (turnback--plural (plist-get c :added) "line")
                                     (plist-get c :removed)))
                            (t "")))
              out)
        (when (plist-get c :diff) (push (plist-get c :diff) out))))
    (if out (apply #'concat (nreverse out))
      (format "No file changed%s.\n" (if (plist-get result :path) (format " under %s" (plist-get result :path)) "")))))

(defun turnback--diff-params (change)
  "The `turnback/diff' params of one CHANGE at point (source, turn, uri)."
  (append (if (equal (plist-get change :source) "user")
              (list :since (max 1 (plist-get change :turn)))
            (list :turn (plist-get change :turn)))
          (when (plist-get change :uri) (list :uri (plist-get change :uri)))
          (when (bound-and-true-p turnback--view-session) (list :sessionId turnback--view-session))))

(defun turnback--only (result change)
  "RESULT with only the changes of CHANGE's kind (a user edit after its turn)."
  (if (not (equal (plist-get change :source) "user")) result
    (plist-put (copy-sequence result) :changes
               (vconcat (cl-remove-if-not
                         (lambda (c) (and (equal (plist-get c :source) "user")
                                          (equal (plist-get c :afterTurn) (plist-get change :turn))))
                         (turnback--list (plist-get result :changes)))))))

(defun turnback--show-diff (server result title)
  "Show RESULT of SERVER in *turnback-diff* (diff-mode, read only) under TITLE."
  (let ((buffer (get-buffer-create "*turnback-diff*")))
    (with-current-buffer buffer
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (propertize title 'face '(:inherit turnback-confirm-heading :height 1.2)) "\n\n"
                (turnback-render-diff result (turnback--root server)))
        (diff-mode)
        (setq default-directory (turnback--root server)
              buffer-read-only t)
        (goto-char (point-min))))
    (display-buffer buffer)
    buffer))

(defun turnback--change-at-point ()
  (or (get-text-property (point) 'turnback-change)
      (user-error "turnback: no file at point (move to a file of a turn, or of your edits)")))

(defun turnback-diff-at-point ()
  "Show what changed in the file at point: the turn's change, or your own edit."
  (interactive)
  (let* ((change (turnback--change-at-point))
         (server turnback--view-server)
         (result (turnback--only (turnback--request server :turnback/diff (turnback--diff-params change))
                                 change)))
    (turnback--show-diff server result
                         (format "%s, %s" (turnback--display-path (plist-get change :uri) (turnback--root server))
                                 (if (equal (plist-get change :source) "user")
                                     (format "your edit after turn %s" (plist-get change :turn))
                                   (format "turn %s" (plist-get change :turn)))))))

;;;###autoload
(defun turnback-diff-turn (turn)
  "Show what TURN changed (every file), in a diff-mode buffer."
  (interactive (list (turnback--choose-turn "Diff of turn: ")))
  (turnback--diff-range (list :turn turn) (format "What turn %s changed" turn)))

;;;###autoload
(defun turnback-diff-since (turn)
  "Show every change from TURN on, your own edits between turns included."
  (interactive (list (turnback--choose-turn "Every change since turn: ")))
  (turnback--diff-range (list :since turn) (format "Every change from turn %s on" turn)))

(defun turnback--choose-turn (prompt)
  "A turn of the current session, chosen with PROMPT."
  (turnback--choose prompt (turnback-prompt-choices
                            (turnback--request (turnback-current-server) :turnback/session/log))))

(defun turnback--diff-range (params title)
  "Show the `turnback/diff' of PARAMS (a turn, or since a turn) under TITLE."
  (let ((server (turnback-current-server)))
    (turnback--show-diff server (turnback--request server :turnback/diff params) title)))

(defun turnback--image-buffer (server side path change)
  "A read-only buffer holding SIDE (a `turnback/diff' side) of PATH, from SERVER."
  (let* ((image (plist-get side :image))
         (read (if image (turnback--request server :turnback/image/read
                                            (append (list :image image)
                                                    (when (bound-and-true-p turnback--view-session)
                                                      (list :sessionId turnback--view-session))))
                 (list :text nil :unknown "not captured")))
         (buffer (generate-new-buffer (format "*turnback %s (%s)*" path (plist-get side :label)))))
    (ignore change)
    (with-current-buffer buffer
      (insert (cond ((stringp (plist-get read :text)) (plist-get read :text))
                    ((turnback--true-p (plist-get read :binary)) "(a binary file)\n")
                    ((eq (plist-get read :exists) :json-false) "")
                    ((turnback--true-p (plist-get read :tooLarge)) "(too large to show)\n")
                    (t (format "(%s)\n" (or (plist-get read :unknown) "not known")))))
      (set-buffer-modified-p nil)
      (setq buffer-read-only t))
    buffer))

(defun turnback-ediff-at-point ()
  "Compare the two sides of the change at point with ediff (read-only buffers)."
  (interactive)
  (let* ((change (turnback--change-at-point))
         (server turnback--view-server)
         (result (turnback--only (turnback--request server :turnback/diff
                                                    (append (turnback--diff-params change) (list :text :json-false)))
                                 change))
         (c (car (turnback--list (plist-get result :changes))))
         (path (turnback--display-path (plist-get change :uri) (turnback--root server))))
    (unless c (user-error "turnback: nothing to compare for %s" path))
    (ediff-buffers (turnback--image-buffer server (plist-get c :before) path change)
                   (turnback--image-buffer server (plist-get c :after) path change))))

(provide 'turnback-diff)
;;; turnback-diff.el ends here
