;;; turnback-directives.el --- turnback.el: directive overlays and the directive panel  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The turnback authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; Directives at their anchor lines (overlays) and the directive panel.
;; Part of turnback.el.

;;; Code:

(require 'cl-lib)
(require 'subr-x)
(require 'turnback)


;;;; Directive overlays

(defun turnback--clear-overlays ()
  "Delete this buffer's directive overlays."
  (save-restriction
    (widen)
    (remove-overlays (point-min) (point-max) 'turnback-directive-overlay t)))

(defun turnback--apply-directives (buffer directives)
  "Show DIRECTIVES in BUFFER as overlays at their anchor lines."
  (with-current-buffer buffer
    (turnback--clear-overlays)
    (when turnback-show-directives
      (save-excursion
        (save-restriction
          (widen)
          (dolist (d (turnback--list directives))
            (goto-char (point-min))
            (forward-line (or (turnback--get d :anchor :line) 0))
            (let* ((ov (make-overlay (line-beginning-position) (line-end-position) nil t nil))
                   (detached (turnback-directive-detached-p d)))
              (overlay-put ov 'turnback-directive-overlay t)
              (overlay-put ov 'turnback-directive d)
              (overlay-put ov 'evaporate nil)
              (overlay-put ov 'help-echo (turnback-directive-help d))
              (overlay-put ov 'after-string
                           (concat " " (propertize (turnback-directive-label d)
                                                   'face (if detached 'turnback-directive-detached
                                                           'turnback-directive)
                                                   'mouse-face 'highlight
                                                   'keymap (turnback--directive-label-map d)
                                                   'help-echo (concat (turnback-directive-help d)
                                                                      "\nmouse-1: the directive panel")))))))))))

(defun turnback--directive-label-map (directive)
  "A keymap for DIRECTIVE's label: a click opens its panel."
  (let ((map (make-sparse-keymap)))
    (define-key map [mouse-1] (lambda () (interactive) (turnback-directive-panel directive)))
    map))

(defun turnback-refresh-directives (&optional server)
  "Fetch every directive from SERVER and redraw the overlays."
  (interactive)
  (let ((server (or server (turnback-current-server))))
    (turnback--show-directive-list server (turnback--request server :turnback/directive/list))))

(defun turnback--refresh-directives-async (server)
  "Fetch every directive from SERVER and redraw the overlays when they come.
Never waits: for notification handlers and timers."
  (turnback--async server :turnback/directive/list nil
                   (lambda (result) (turnback--show-directive-list server result))
                   (lambda (why) (turnback--log server (format "directives not refreshed: %s" why)))))

(defun turnback--show-directive-list (server result)
  "Remember the directives of RESULT (a `directive/list' answer) and redraw."
  (let ((by-uri (make-hash-table :test #'equal)))
    (dolist (d (turnback--list (plist-get result :directives)))
      (push d (gethash (plist-get d :uri) by-uri)))
    ;; Forget files that no longer have directives, so their overlays go.
    (maphash (lambda (uri _) (unless (gethash uri by-uri) (puthash uri nil by-uri)))
             (turnback--directives server))
    (maphash (lambda (uri ds)
               (let ((ds (vconcat (nreverse ds))))
                 (puthash uri ds (turnback--directives server))
                 (when-let ((buffer (find-buffer-visiting (turnback--uri-to-path uri))))
                   (turnback--apply-directives buffer ds))))
             by-uri)))

(defun turnback-directive-overlays (&optional buffer)
  "The directive overlays of BUFFER, in buffer order."
  (with-current-buffer (or buffer (current-buffer))
    (sort (cl-remove-if-not (lambda (ov) (overlay-get ov 'turnback-directive-overlay))
                            (save-restriction (widen) (overlays-in (point-min) (point-max))))
          (lambda (a b) (< (overlay-start a) (overlay-start b))))))

(defun turnback-directive-at-point ()
  "The directive anchored on the current line, or nil."
  (cl-some (lambda (ov) (overlay-get ov 'turnback-directive))
           (cl-remove-if-not (lambda (ov) (overlay-get ov 'turnback-directive-overlay))
                             (overlays-in (line-beginning-position) (1+ (line-end-position))))))

(defun turnback-directive-add (request)
  "Anchor a new directive with REQUEST on the current line."
  (interactive "sDirective request: ")
  (let ((server (turnback-current-server)))
    (unless buffer-file-name (user-error "turnback: this buffer does not visit a file"))
    (turnback--request server :turnback/directive/upsert
                       (list :uri (turnback--path-to-uri buffer-file-name)
                             :anchor (list :line (1- (line-number-at-pos)) :character 0)
                             :request request))))

;;;; The directive panel

(defvar-local turnback--panel-directive nil
  "The id of the directive this panel shows.")

(defvar turnback-directive-panel-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "b" #'turnback-directive-panel-begin)
    (define-key map "e" #'turnback-directive-panel-edit)
    (define-key map "r" #'turnback-directive-panel-rewind)
    (define-key map "g" #'turnback-directive-panel-refresh)
    (define-key map "n" #'turnback--next-item)
    (define-key map "p" #'turnback--previous-item)
    map)
  "Keymap of `turnback-directive-panel-mode'.")

(define-derived-mode turnback-directive-panel-mode special-mode "turnback-directive"
  "One directive: its request, state, attempts and their answers.
\\<turnback-directive-panel-mode-map>\\[turnback-directive-panel-begin] begins an attempt (a
directive turn), \\[turnback-directive-panel-edit] edits the request,
\\[turnback-directive-panel-rewind] rewinds to just before the attempt at point,
\\[turnback-directive-panel-refresh] refreshes."
  (setq truncate-lines nil))

(defun turnback-render-directive-panel (directive &optional root)
  "The panel text of DIRECTIVE, relative to ROOT."
  (let ((attempts (turnback--list (plist-get directive :attempts)))
        (subs (turnback--list (plist-get directive :subdirectives))))
    (concat
     (turnback--heading (format "Directive %s: %s" (plist-get directive :id)
                                (turnback-directive-name (plist-get directive :request))))
     (format "  state:   %s%s\n" (plist-get directive :state)
             (if (turnback-directive-detached-p directive) " (its anchor line changed or disappeared)" ""))
     (format "  anchor:  %s:%s\n" (turnback--display-path (plist-get directive :uri) root)
             (1+ (or (turnback--get directive :anchor :line) 0)))
     "\n" (turnback--heading "Request")
     (mapconcat (lambda (line) (concat "  " line "\n"))
                (split-string (string-trim-right (or (plist-get directive :request) "")) "\n") "")
     "\n" (turnback--heading (if attempts (turnback--plural (length attempts) "attempt") "Attempts"))
     (if (null attempts) "  none yet (b begins one)\n"
       (mapconcat
        (lambda (a)
          (propertize
           (concat (format "  turn %s\n" (plist-get a :turn))
                   (if (plist-get a :answer) (format "    answer:   %s\n" (turnback--one-line (plist-get a :answer) 70)) "")
                   (if (plist-get a :feedback) (format "    feedback: %s\n" (turnback--one-line (plist-get a :feedback) 70)) "")
                   (if (plist-get a :patch) (format "    patch:    %s\n" (turnback--one-line (plist-get a :patch) 70)) ""))
           'turnback-item (plist-get a :turn)))
        attempts ""))
     (if subs
         (concat "\n" (turnback--heading "Subdirectives")
                 (mapconcat (lambda (s) (format "  %s%s\n" (plist-get s :id)
                                                (if (turnback--true-p (plist-get s :consumed)) " (consumed)" "")))
                            subs ""))
       "")
     "\n" (propertize "b: begin an attempt   e: edit the request   r: rewind before the attempt at point   g: refresh"
                      'face 'bold)
     "\n")))

(defun turnback--directive-by-id (server id)
  "The directive ID of SERVER, fetched afresh."
  (or (cl-find id (turnback--list (plist-get (turnback--request server :turnback/directive/list) :directives))
               :key (lambda (d) (plist-get d :id)) :test #'equal)
      (user-error "turnback: there is no directive %s" id)))

;;;###autoload
(defun turnback-directive-panel (&optional directive)
  "Show DIRECTIVE (the one anchored at point, or one chosen) in a side window."
  (interactive)
  (let* ((server (turnback-current-server))
         (directive (or directive (turnback-directive-at-point)
                        (turnback--choose "Directive: "
                                          (turnback-directive-choices
                                           (turnback--list (plist-get (turnback--request server :turnback/directive/list)
                                                                      :directives))
                                           (turnback--root server)))))
         (buffer (get-buffer-create "*turnback-directive*")))
    (with-current-buffer buffer
      (turnback-directive-panel-mode)
      (setq turnback--view-server server
            turnback--panel-directive (plist-get directive :id)
            default-directory (turnback--root server))
      (turnback-directive-panel-refresh))
    (display-buffer-in-side-window buffer '((side . right) (window-width . 0.4)))
    buffer))

(defun turnback-directive-panel-refresh (&optional directive)
  "Redraw the panel (with DIRECTIVE when given, else fetched afresh)."
  (interactive)
  (let ((d (or directive (turnback--directive-by-id turnback--view-server turnback--panel-directive)))
        (inhibit-read-only t)
        (pos (point)))
    (erase-buffer)
    (insert (turnback-render-directive-panel d (turnback--root turnback--view-server)))
    (goto-char (min pos (point-max)))
    d))

(defun turnback--refresh-panels (server directives)
  "Redraw a panel of SERVER showing one of DIRECTIVES (a directive notification)."
  (when-let ((buffer (get-buffer "*turnback-directive*")))
    (with-current-buffer buffer
      (when (eq turnback--view-server server)
        (when-let ((d (cl-find turnback--panel-directive (turnback--list directives)
                               :key (lambda (x) (plist-get x :id)) :test #'equal)))
          (turnback-directive-panel-refresh d))))))

(defun turnback-directive-panel-begin (prompt)
  "Begin an attempt at the panel's directive: a directive turn with PROMPT."
  (interactive
   (let ((d (turnback--directive-by-id turnback--view-server turnback--panel-directive)))
     (list (read-string (format-prompt "Prompt" (turnback-directive-name (plist-get d :request)))
                        nil nil (plist-get d :request)))))
  (let ((turn (turnback-turn-begin prompt turnback--panel-directive)))
    (turnback-directive-panel-refresh)
    turn))

(defun turnback-directive-panel-edit (request)
  "Replace the request of the panel's directive with REQUEST."
  (interactive
   (let ((d (turnback--directive-by-id turnback--view-server turnback--panel-directive)))
     (list (read-string "Request: " (plist-get d :request)))))
  (let* ((d (turnback--directive-by-id turnback--view-server turnback--panel-directive))
         (new (turnback--request turnback--view-server :turnback/directive/upsert
                                 (list :id (plist-get d :id) :uri (plist-get d :uri)
                                       :anchor (list :line (or (turnback--get d :anchor :line) 0)
                                                     :character (or (turnback--get d :anchor :character) 0))
                                       :request request))))
    (turnback-directive-panel-refresh)
    (message "turnback: directive %s now asks “%s”" (plist-get d :id) (turnback-directive-name request))
    new))

(defun turnback-directive-panel-rewind ()
  "Rewind to just before the attempt at point (its newest one elsewhere)."
  (interactive)
  (let* ((d (turnback--directive-by-id turnback--view-server turnback--panel-directive))
         (turn (or (get-text-property (point) 'turnback-item)
                   (plist-get (car (last (turnback--list (plist-get d :attempts)))) :turn)
                   (user-error "turnback: directive %s has no attempt to rewind before" (plist-get d :id)))))
    (turnback--rewind turnback--view-server
                      (list :kind "beforeDirectiveAttempt" :directiveId (plist-get d :id) :turn turn))))

(provide 'turnback-directives)
;;; turnback-directives.el ends here
