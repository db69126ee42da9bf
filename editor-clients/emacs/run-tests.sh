#!/usr/bin/env bash
# ERT suite of the Emacs client, against the real `turnback serve`.
#
#   TURNBACK_SERVER   the server command (default: `turnback serve`, with turnback found on PATH;
#                     CI puts the project's virtual environment on PATH)
#   EMACS             the Emacs to run (default: emacs)
#
# Installs Emacs and eglot from the distribution's packages when Emacs is missing (Debian/Ubuntu).
set -euo pipefail
cd "$(dirname "$0")"

EMACS="${EMACS:-emacs}"
if ! command -v "$EMACS" >/dev/null 2>&1; then
  echo "== Emacs is missing: installing emacs-nox and elpa-eglot from the distribution's packages"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y emacs-nox elpa-eglot
fi

TURNBACK_SERVER="${TURNBACK_SERVER:-turnback serve}"
export TURNBACK_SERVER
server_program="${TURNBACK_SERVER%% *}"
if ! command -v "$server_program" >/dev/null 2>&1; then
  echo "run-tests.sh: cannot find the server program '$server_program'." >&2
  echo "Put turnback on PATH (e.g. PATH=\$PWD/.venv/bin:\$PATH) or set TURNBACK_SERVER." >&2
  exit 2
fi
echo "== server: $TURNBACK_SERVER ($(command -v "$server_program"))"

# `emacs -Q` would not see the distribution's eglot (Emacs 28); make it visible when it is not
# built in (Emacs 29+ has it), then run the suite.
exec "$EMACS" -Q --batch \
  --eval '(unless (require (quote eglot) nil t)
            (require (quote package))
            (setq package-directory-list
                  (append package-directory-list (list "/usr/share/emacs/site-lisp/elpa")))
            (package-initialize)
            (require (quote eglot)))' \
  -L . -l ert -l turnback.el -l test/turnback-test.el -l test/turnback-ux-test.el -l test/turnback-editors-test.el \
  -f ert-run-tests-batch-and-exit </dev/null
