#!/usr/bin/env bash
# The real-editor suite: the extension packaged with vsce, installed into code-server (VS Code in a
# browser, built from the npm registry and cached outside the clone), driven through headless
# Chromium with Playwright for Python. Installs what it needs when it is missing:
#   apt:  chromium build-essential pkg-config libkrb5-dev ripgrep   (one `apt-get update` first)
#   pip:  playwright (the project's `vscode-e2e` extra), into the Python that has turnback
#   npm:  code-server (CODE_SERVER_VERSION, default 4.100.3; see code-server.sh, which also brings the
#         Node it needs), the extension's locked dependencies
# Screenshots of every step, the extension's output and code-server's log land in
# build/vscode-e2e-<code-server version>/ at the repository root (ignored by git; CI keeps it).
#
# Environment: TURNBACK_E2E_PYTHON (default: the repository's .venv, else python3),
# TURNBACK_CI_CACHE (default ~/.cache/turnback-ci), TURNBACK_E2E_KEEP=1 keeps the scratch workspace.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ext="$(dirname "$here")"
repo="$(cd "$ext/../.." && pwd)"

packages=(chromium build-essential pkg-config libkrb5-dev ripgrep)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "e2e/run.sh: missing system packages: ${missing[*]} (apt-get install them as root)" >&2
    exit 2
  fi
  echo "e2e/run.sh: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

python="${TURNBACK_E2E_PYTHON:-}"
if [ -z "$python" ]; then
  if [ -x "$repo/.venv/bin/python" ]; then python="$repo/.venv/bin/python"; else python="$(command -v python3)"; fi
fi
if ! "$python" -c "import turnback" 2>/dev/null; then
  echo "e2e/run.sh: $python has no turnback (pip install -e . in the repository)" >&2
  exit 2
fi
if ! "$python" -c "import playwright" 2>/dev/null; then
  "$python" -m pip install -q -e "$repo[vscode-e2e]"
fi
turnback="$(dirname "$python")/turnback"
[ -x "$turnback" ] || turnback="$(command -v turnback)"

entry="$("$here/code-server.sh")"
code_version="${CODE_SERVER_VERSION:-4.100.3}"

out="$repo/build/vscode-e2e-$code_version"
mkdir -p "$repo/build"
cd "$ext"
[ -d node_modules ] || npm ci --no-audit --no-fund
npm run build
# The docs' install steps, literally (docs/clients.md, "VS Code", "Install"): npm ci, npm run build,
# npm run package, then the .vsix installed with code-server's `--install-extension` (conftest).
npm run package
version_of_ext="$(node -p 'require("./package.json").version')"
vsix="$repo/build/turnback-$version_of_ext.vsix"
mv "turnback-$version_of_ext.vsix" "$vsix"

export TURNBACK_CODE_SERVER="$entry" TURNBACK_VSIX="$vsix" TURNBACK_E2E_TURNBACK="$turnback"
export TURNBACK_E2E_ARTIFACTS="$out"
cd "$repo"
echo "e2e/run.sh: code-server $entry, extension $vsix, server $turnback"
# One process (-n 0): the server's suite runs in xdist workers (pyproject's addopts), but the real
# editors share one code-server build and its user-data folder.
# Extra arguments go to pytest (e.g. `-k 800px` to run one test).
"$python" -m pytest -q -p no:cacheprovider -n 0 "$here" "$@"
