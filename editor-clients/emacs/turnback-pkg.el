;;; turnback-pkg.el --- package description of turnback.el  -*- no-byte-compile: t -*-
(define-package "turnback" "0.1.0"
  "Rewind and Redo for AI coding-agent sessions"
  '((emacs "28.1") (jsonrpc "1.0.14"))
  :keywords '("tools" "convenience" "processes"))
;;; turnback-pkg.el ends here
