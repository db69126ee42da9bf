;;; turnback-watch.el --- turnback.el: watching the workspace's files  -*- lexical-binding: t; -*-

;; Copyright (C) 2025 The turnback authors

;; This file is not part of GNU Emacs.

;;; Commentary:

;; The server registers `workspace/didChangeWatchedFiles' for every
;; file of the workspace (LSP's dynamic registration).  Its own inotify
;; watcher only tells its sweeps where to look; the client's watches
;; make it capture a file as soon as it changes (an agent's edit), and
;; let the client revert unmodified buffers and refresh the views.
;; The watches are made here with `file-notify-add-watch' (no eglot):
;; a watch per directory of the project, never the store or .git.
;; Part of turnback.el.

;;; Code:

(require 'cl-lib)
(require 'filenotify)
(require 'turnback)

(cl-defmethod turnback-handle-request
  ((server turnback-server) (_method (eql client/registerCapability)) &key registrations
   &allow-other-keys)
  "Watch the workspace when asked to (and `turnback-watch-files' allows)."
  (when turnback-watch-files
    (mapc (lambda (registration)
            (when (equal (plist-get registration :method) "workspace/didChangeWatchedFiles")
              (turnback--watch-workspace server (plist-get registration :id))))
          registrations))
  nil)

(cl-defmethod turnback-handle-request
  ((server turnback-server) (_method (eql client/unregisterCapability)) &key unregisterations
   unregistrations &allow-other-keys)
  "Remove the watches of a registration (LSP spells the key `unregisterations')."
  (mapc (lambda (u) (turnback--unwatch server (plist-get u :id)))
        (or unregisterations unregistrations))
  nil)

(defun turnback--watched-directories (server)
  "The directories of SERVER's project to watch: never the store or .git."
  (let ((root (turnback--root server)))
    (cl-remove-if (lambda (dir)
                    (or (turnback--in-store-p server dir)
                        (file-in-directory-p dir (expand-file-name ".git" root))))
                  (delete-dups
                   (cons root (mapcar #'file-name-directory
                                      (project-files (turnback--project server))))))))

(defun turnback--emacs-scratch-file-p (file)
  "Non-nil for Emacs's own lock, auto-save and backup files, never reported."
  (let ((name (file-name-nondirectory file)))
    (or (string-prefix-p ".#" name)
        (string-match-p "\\`#.*#\\'" name)
        (string-suffix-p "~" name))))

(defun turnback--file-event (server event)
  "Report the file-notify EVENT to SERVER.
Then revert its buffer and refresh the views."
  (pcase-let ((`(,_desc ,action ,file ,file1) event))
    (cond
     ((eq action 'renamed)
      (turnback--file-event server (list nil 'deleted file))
      (turnback--file-event server (list nil 'created file1)))
     ((and (memq action '(created changed deleted))
           (turnback--live-p server)
           (not (turnback--in-store-p server file))
           (not (turnback--emacs-scratch-file-p file))
           (not (file-directory-p file)))
      (jsonrpc-notify server :workspace/didChangeWatchedFiles
                      (list :changes (vector (list :uri (turnback--path-to-uri file)
                                                   :type (pcase action ('created 1) ('changed 2) (_ 3))))))
      (turnback--revert-soon file)
      (turnback--after-change server)))))

(defun turnback--watch-workspace (server id)
  "Watch the directories of SERVER's workspace under the registration ID."
  (turnback--unwatch server id)
  (let ((dirs (turnback--watched-directories server)) watches)
    (dolist (dir dirs)
      (condition-case err
          (push (file-notify-add-watch dir '(change) (lambda (event) (turnback--file-event server event)))
                watches)
        (error (turnback--log server (format "cannot watch %s: %s" dir (error-message-string err))))))
    (puthash id watches (turnback--file-watches server))
    (turnback--log server (format "watching %d of %d directories" (length watches) (length dirs)))))

(defun turnback--unwatch (server id)
  "Remove the watches of SERVER's registration ID."
  (mapc #'file-notify-rm-watch (gethash id (turnback--file-watches server)))
  (remhash id (turnback--file-watches server)))

(defun turnback--unwatch-all (server)
  "Remove every watch of SERVER."
  (maphash (lambda (_id watches) (mapc #'file-notify-rm-watch watches))
           (turnback--file-watches server))
  (clrhash (turnback--file-watches server)))

(provide 'turnback-watch)
;;; turnback-watch.el ends here
