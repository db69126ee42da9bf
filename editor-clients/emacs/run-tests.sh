#!/usr/bin/env bash
# ERT suite of the Emacs client, against the real `turnback serve`.
#
#   TURNBACK_SERVER            the server command (default: `turnback serve`, with turnback found on PATH;
#                              CI puts the project's virtual environment on PATH)
#   EMACS                      the Emacs to run (default: emacs); .ci/emacs-matrix.sh runs 28.2 and 30.1
#   TURNBACK_TEST_LOAD_PATH    directories (colon-separated) added to the tests' load-path, e.g. an
#                              eglot for the test that runs eglot beside turnback on Emacs 28
#   TURNBACK_REQUIRE_EGLOT=1   the eglot-beside-turnback test fails, rather than skips, without eglot
#   TURNBACK_ERT_TEST_TIMEOUT  seconds one test may take before it fails as hung (default 120)
#   TURNBACK_ERT_SELECTOR      an ERT selector (a regexp of test names), to run part of the suite
#
# The client itself needs no eglot: the suite loads none unless a test asks for it.
set -euo pipefail
cd "$(dirname "$0")"

EMACS="${EMACS:-emacs}"
if ! command -v "$EMACS" >/dev/null 2>&1; then
  echo "== Emacs is missing: installing emacs-nox from the distribution's packages"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y emacs-nox
fi
# Tests that start another Emacs (a package install, an Emacs without eglot) start this one.
TURNBACK_TEST_EMACS="$(command -v "$EMACS")"
export TURNBACK_TEST_EMACS

TURNBACK_SERVER="${TURNBACK_SERVER:-turnback serve}"
export TURNBACK_SERVER
server_program="${TURNBACK_SERVER%% *}"
if ! command -v "$server_program" >/dev/null 2>&1; then
  echo "run-tests.sh: cannot find the server program '$server_program'." >&2
  echo "Put turnback on PATH (e.g. PATH=\$PWD/.venv/bin:\$PATH) or set TURNBACK_SERVER." >&2
  exit 2
fi
echo "== server: $TURNBACK_SERVER ($(command -v "$server_program"))"
echo "== $("$EMACS" --version | head -1)"

load_path=()
IFS=: read -r -a extra <<< "${TURNBACK_TEST_LOAD_PATH:-}"
for dir in "${extra[@]}"; do [ -n "$dir" ] && load_path+=(-L "$dir"); done

exec "$EMACS" -Q --batch "${load_path[@]}" -L . -l ert -l turnback.el \
  -l test/turnback-test.el -l test/turnback-ux-test.el -l test/turnback-editors-test.el \
  -l test/turnback-peers-test.el -l test/turnback-freeze-test.el \
  -l test/turnback-test-bounds.el \
  --eval '(ert-run-tests-batch-and-exit (or (getenv "TURNBACK_ERT_SELECTOR") t))' </dev/null
