#!/usr/bin/env bash
# The VS Code client's suites, as CI runs them: install the locked dependencies, build with tsc (no
# errors allowed), the plain-Node tests against the REAL `turnback serve` (fast), then the
# real-editor suite (e2e/run.sh: the packaged extension in code-server, driven through headless
# Chromium; the proof) on each VS Code of the matrix, one after the other:
#   TURNBACK_CODE_SERVER_VERSIONS  default "4.100.3 4.139.1": VS Code 1.100 (the oldest supported,
#                                  engines.vscode ^1.100.0, on Node 20) and 1.139 (current, on Node 24)
# TURNBACK_SKIP_REAL_EDITOR=1 runs the plain-Node tests only.
#
# The server command comes from TURNBACK_SERVER (a command line), else `turnback serve` from PATH,
# else the repository's .venv when it has one.
set -euo pipefail
cd "$(dirname "$0")"

if [ -z "${TURNBACK_SERVER:-}" ] && ! command -v turnback >/dev/null 2>&1; then
  if [ -x ../../.venv/bin/turnback ]; then
    export TURNBACK_SERVER="$(cd ../.. && pwd)/.venv/bin/turnback serve"
  else
    echo "run-tests.sh: no turnback on PATH and TURNBACK_SERVER is not set" >&2
    echo "  (pip install -e . in the repository, or export TURNBACK_SERVER='/path/to/turnback serve')" >&2
    exit 2
  fi
fi
echo "server: ${TURNBACK_SERVER:-$(command -v turnback) serve}"

if [ -f package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  npm install --no-audit --no-fund
fi
npm run build
npm test
if [ "${TURNBACK_SKIP_REAL_EDITOR:-}" = 1 ]; then
  echo "real-editor suite skipped (TURNBACK_SKIP_REAL_EDITOR=1)"
else
  failed=()
  for version in ${TURNBACK_CODE_SERVER_VERSIONS:-4.100.3 4.139.1}; do
    echo "== the real-editor suite on code-server $version"
    CODE_SERVER_VERSION="$version" e2e/run.sh || failed+=("$version")
  done
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "run-tests.sh: the real-editor suite failed on code-server ${failed[*]}" >&2
    exit 1
  fi
fi
