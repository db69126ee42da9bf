#!/usr/bin/env bash
# CI for issue 41: build every release artifact with tools/build-dist, then install each one the way
# a user would, from a copy of dist/ in a folder with no checkout beside it and with this clone's
# virtual environment off PATH:
#   the wheel   into a plain venv (pip), with pipx and with uv: `turnback demo`, `demo --agent`, and
#               every agent's hook install, whose written command is then run from a bare environment
#   Emacs       package-install from the local archive, turnback-install-server, turnback-start (ERT);
#               package-vc-install from this clone likewise (Emacs 29+)
#   VS Code     the linux-x64 .vsix in code-server, no turnback on PATH: its bundled server starts and
#               rewinds a session (editor-clients/vscode/e2e/test_bundled_server.py)
# Downloads are cached in ~/.cache/turnback-ci (TURNBACK_CI_CACHE). Prints the minutes it took.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cache="${TURNBACK_CI_CACHE:-$HOME/.cache/turnback-ci}"
started=$(date +%s)
step() { echo "== release: $* ($(( $(date +%s) - started )) s)"; }

# A PATH without this clone's venv (.ci/run puts it first) and without anything else of the clone.
clean_path="$(printf '%s' "$PATH" | tr ':' '\n' | grep -v "^$repo" | paste -sd: -)"
python="$(PATH="$clean_path" command -v python3)"

step "build-dist"
PATH="$clean_path" "$python" "$repo/tools/build-dist"

# Everything below works on a copy of dist/ far from the clone.
scratch="$(mktemp -d /tmp/turnback-release.XXXXXX)"
# The hook commands start a background owner per project: stop each before the scratch folder goes
# (one recreated .turnback/lease.lock while rm ran, and rm failed).
owners=()
cleanup() {
  local entry
  for entry in "${owners[@]}"; do
    env -i HOME="$HOME" PATH=/usr/bin:/bin "${entry%%|*}" --workspace "${entry#*|}" daemon stop >/dev/null 2>&1 || true
  done
  rm -rf "$scratch"
}
trap cleanup EXIT
cp -r "$repo/dist" "$scratch/dist"
cd "$scratch"
wheel="$(ls "$scratch"/dist/turnback-*-py3-none-any.whl)"

# pipx and uv, from the registry into the cache (a rerun finds them).
tools="$cache/release-tools"
if [ ! -f "$tools/.complete" ]; then
  rm -rf "$tools"
  "$python" -m venv "$tools" && "$tools/bin/pip" install -q pipx uv && touch "$tools/.complete"
fi

# check_installed NAME TURNBACK: the demo, an agent's demo, every agent's hooks, each hook command run
# from a bare environment (PATH=/usr/bin:/bin, as an agent started from a menu might have).
check_installed() {
  local name="$1" tb="$2" project="$scratch/project-$1"
  step "$name: $tb"
  case "$tb" in "$repo"*) echo "release: $tb is inside the clone" >&2; exit 1;; esac
  (cd "$scratch" && env -i HOME="$HOME" PATH=/usr/bin:/bin "$tb" demo >"$scratch/$name-demo.log" 2>&1) \
    || { cat "$scratch/$name-demo.log"; exit 1; }
  tail -2 "$scratch/$name-demo.log"
  (cd "$scratch" && env -i HOME="$HOME" PATH=/usr/bin:/bin "$tb" demo --agent claude-code >"$scratch/$name-agent.log" 2>&1) \
    || { cat "$scratch/$name-agent.log"; exit 1; }
  tail -1 "$scratch/$name-agent.log"
  mkdir -p "$project" && git -C "$project" init -q
  owners+=("$tb|$project")
  for agent in claude-code codex gemini copilot cursor; do
    (cd "$project" && env -i HOME="$HOME" PATH=/usr/bin:/bin "$tb" hooks install "$agent" >/dev/null)
  done
  local commands
  commands="$(grep -rhoE '"[^"]*turnback[^"]* hook [a-z-]+( --event [a-zA-Z]+)?"' "$project"/.claude "$project"/.codex \
              "$project"/.gemini "$project"/.github "$project"/.cursor | tr -d '"' | sort -u)"
  [ "$(printf '%s\n' "$commands" | wc -l)" -ge 5 ] || { echo "release: too few hook commands: $commands" >&2; exit 1; }
  while IFS= read -r command; do
    case "$command" in /*) ;; *) echo "release: hook command is not absolute: $command" >&2; exit 1;; esac
    case "$command" in "$repo"*) echo "release: hook command points into the clone: $command" >&2; exit 1;; esac
    printf '{"session_id":"ci","sessionId":"ci","hook_event_name":"SessionStart","cwd":"%s"}' "$project" \
      | (cd "$project" && env -i HOME="$HOME" PATH=/usr/bin:/bin sh -c "$command") >/dev/null \
      || { echo "release: the hook command failed from a bare environment: $command" >&2; exit 1; }
  done <<<"$commands"
  grep -q "turnback session" "$project/.turnback/agents/hook.log" \
    || { echo "release: the hooks recorded nothing" >&2; cat "$project/.turnback/agents/hook.log" >&2; exit 1; }
  env -i HOME="$HOME" PATH=/usr/bin:/bin "$tb" --workspace "$project" daemon stop >/dev/null
  echo "release: $name: demo, agent demo and $(printf '%s\n' "$commands" | wc -l) hook commands work"
}

step "wheel into a plain venv"
"$python" -m venv "$scratch/venv" && "$scratch/venv/bin/pip" install -q "$wheel"
check_installed venv "$scratch/venv/bin/turnback"

step "wheel with pipx"
PIPX_HOME="$scratch/pipx" PIPX_BIN_DIR="$scratch/pipx-bin" PIPX_MAN_DIR="$scratch/pipx-man" \
  "$tools/bin/pipx" install --python "$python" "$wheel" >/dev/null
check_installed pipx "$scratch/pipx-bin/turnback"

step "wheel with uv tool install"
UV_TOOL_DIR="$scratch/uv-tools" UV_TOOL_BIN_DIR="$scratch/uv-bin" UV_CACHE_DIR="$cache/uv" \
  "$tools/bin/uv" tool install -q --python "$python" "$wheel"
check_installed uv "$scratch/uv-bin/turnback"

# On each Emacs .ci/emacs-matrix.sh unpacked (28.2 and 30.1, run before this), else the machine's.
emacsen="$(ls "$cache"/emacs/*/bin/emacs 2>/dev/null || true)"
if [ -z "$emacsen" ]; then
  if ! command -v emacs >/dev/null 2>&1; then
    SUDO=""; if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    $SUDO apt-get -q update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get -q install -y emacs-nox
  fi
  emacsen="$(command -v emacs)"
fi
# Also package-vc-install from this clone (its HEAD commit; Emacs 29+, so on 30.1 only).
vc_source=""; if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then vc_source="$repo"; fi
for emacs in $emacsen; do
  step "Emacs $("$emacs" --version | head -1): package-install from dist/emacs (and package-vc-install), turnback-install-server, turnback-start"
  TURNBACK_VC_SOURCE="$vc_source" EMACS="$emacs" PATH="$clean_path" "$repo/editor-clients/emacs/test/run-dist-tests.sh" "$scratch/dist"
done

step "VS Code: the linux-x64 .vsix in code-server, no turnback on PATH: its bundled server rewinds a session"
e2e_python="$repo/.venv/bin/python"   # the test harness (Playwright), not the server under test
"$e2e_python" -c "import playwright" 2>/dev/null || "$e2e_python" -m pip install -q -e "$repo[vscode-e2e]"
code_server="$("$repo/editor-clients/vscode/e2e/code-server.sh")"
TURNBACK_BUNDLED_VSIX="$(ls "$scratch"/dist/vscode/turnback-linux-x64-*.vsix)" TURNBACK_CODE_SERVER="$code_server" \
TURNBACK_E2E_TURNBACK="$scratch/venv/bin/turnback" TURNBACK_E2E_ARTIFACTS="$repo/build/release-e2e" \
  "$e2e_python" -m pytest -q -p no:cacheprovider -n 0 "$repo/editor-clients/vscode/e2e/test_bundled_server.py"

step "done"
echo "release.sh: $(( ($(date +%s) - started) / 60 )) min $(( ($(date +%s) - started) % 60 )) s"
