#!/usr/bin/env bash
# Installs the pinned real agent CLIs (Claude Code, Codex, Gemini CLI, OpenCode, claude-agent-acp,
# Copilot CLI) from the npm registry into a cache OUTSIDE the clone, each package once per version in
# a folder of its own, and prints a folder of links to their commands (`claude`, `codex`, `gemini`,
# `opencode`, `claude-agent-acp`, `copilot`). A rerun on the same machine finds the cache and returns
# at once; a fresh machine downloads what is missing, the packages side by side. tests/agents_real calls
# this same script when the agents are missing, and `.ci/run` calls it first.
#
# Claude Code's post-install links its platform binary into place (an optional dependency), Codex's
# and OpenCode's launchers find their own; Gemini CLI is JavaScript; Copilot CLI unpacks its own
# package on first start (into COPILOT_PKG_CACHE_HOME, kept beside these). None downloads anything else.
set -euo pipefail

claude_version="${CLAUDE_CODE_VERSION:-2.1.328}"
codex_version="${CODEX_VERSION:-0.169.0}"
gemini_version="${GEMINI_CLI_VERSION:-0.61.0}"
opencode_version="${OPENCODE_VERSION:-1.18.33}"
acp_version="${CLAUDE_AGENT_ACP_VERSION:-0.101.0}"
copilot_version="${COPILOT_VERSION:-1.0.102}"
cache="${TURNBACK_CI_CACHE:-$HOME/.cache/turnback-ci}"
# command | npm package | version
agents=(
  "claude|@anthropic-ai/claude-code|$claude_version"
  "codex|@openai/codex|$codex_version"
  "gemini|@google/gemini-cli|$gemini_version"
  "opencode|opencode-ai|$opencode_version"
  "claude-agent-acp|@agentclientprotocol/claude-agent-acp|$acp_version"
  "copilot|@github/copilot|$copilot_version"
)
bin="$cache/bin-claude-$claude_version-codex-$codex_version-gemini-$gemini_version-opencode-$opencode_version-acp-$acp_version-copilot-$copilot_version"

# The version checks run in a scratch world: `codex --version` alone makes ~/.codex.
scratch="$(mktemp -d)"
works=()
cleanup() { rm -rf "$scratch" "${works[@]}"; }
trap cleanup EXIT
reports() {  # reports COMMAND VERSION: the command prints that version
  HOME="$scratch" CLAUDE_CONFIG_DIR="$scratch/claude" CODEX_HOME="$scratch/codex" \
    XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config" COPILOT_HOME="$scratch/copilot" \
    COPILOT_AUTO_UPDATE=false \
    timeout 120 "$1" --version 2>/dev/null | grep -qF "$2"
}
folder() { echo "$cache/npm-${2//[@\/]/_}-$3"; }  # folder COMMAND PACKAGE VERSION

# Each package's `.complete` is written only once its command reported the pinned version: a rerun
# trusts it (asking four agents their version takes 20 s on a loaded machine).
if [ -f "$bin/.complete" ]; then
  ok=1
  for a in "${agents[@]}"; do
    IFS='|' read -r cmd package version <<< "$a"
    [ -f "$(folder "$cmd" "$package" "$version")/.complete" ] && [ -x "$bin/$cmd" ] || ok=0
  done
  if [ "$ok" = 1 ]; then echo "$bin"; exit 0; fi
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-agents.sh: npm is missing (install Node.js 20 or later)" >&2
  exit 2
fi
mkdir -p "$cache"

pids=()
for a in "${agents[@]}"; do
  IFS='|' read -r cmd package version <<< "$a"
  dest="$(folder "$cmd" "$package" "$version")"
  if [ -f "$dest/.complete" ] && [ -x "$dest/node_modules/.bin/$cmd" ]; then
    continue
  fi
  echo "install-agents.sh: installing $package@$version into $dest" >&2
  work="$dest.partial.$$"   # one per run: two runs at once never share a half-made tree
  works+=("$work")
  rm -rf "$work"
  mkdir -p "$work"
  (
    cd "$work"
    echo '{"name": "turnback-ci-agent", "private": true}' > package.json
    if ! npm install --no-audit --no-fund --foreground-scripts "$package@$version" > npm.log 2>&1; then
      cat npm.log >&2
      exit 1
    fi
    if ! reports "$work/node_modules/.bin/$cmd" "$version"; then
      echo "install-agents.sh: $cmd does not report version $version:" >&2
      "$work/node_modules/.bin/$cmd" --version >&2 || true
      exit 1
    fi
    touch .complete
    if [ -f "$dest/.complete" ] && reports "$dest/node_modules/.bin/$cmd" "$version"; then
      echo "install-agents.sh: another run finished $package first; keeping its install" >&2
    else
      rm -rf "$dest"
      mv "$work" "$dest"
    fi
  ) &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
if [ "$failed" = 1 ]; then
  echo "install-agents.sh: an agent failed to install (above)" >&2
  exit 1
fi

# The folder of links the tests put on the agents' PATH: made anew, then moved into place whole.
links="$bin.partial.$$"
works+=("$links")
rm -rf "$links"
mkdir -p "$links"
for a in "${agents[@]}"; do
  IFS='|' read -r cmd package version <<< "$a"
  ln -s "$(folder "$cmd" "$package" "$version")/node_modules/.bin/$cmd" "$links/$cmd"
done
touch "$links/.complete"
rm -rf "$bin"
mv "$links" "$bin"
echo "$bin"
