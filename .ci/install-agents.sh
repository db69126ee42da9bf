#!/usr/bin/env bash
# Installs the pinned real agent CLIs (Claude Code and Codex) from the npm registry, once per pair of
# versions, into a cache OUTSIDE the clone, and prints the folder that holds their commands (`claude`,
# `codex`). A rerun on the same machine finds the cache and returns at once; a fresh machine downloads
# them (about 800 MB, under a minute on a good line). tests/agents_real calls this same script when the
# agents are missing, and `.ci/run` calls it first.
#
# Both packages are native binaries: Claude Code's post-install links the platform binary into place
# (its optional dependency), Codex's launcher finds its own; neither downloads anything else.
set -euo pipefail

claude_version="${CLAUDE_CODE_VERSION:-2.1.328}"
codex_version="${CODEX_VERSION:-0.169.0}"
cache="${TURNBACK_CI_CACHE:-$HOME/.cache/turnback-ci}"
dest="$cache/agents-claude-$claude_version-codex-$codex_version"
bin="$dest/node_modules/.bin"

# The version checks run in a scratch world: `codex --version` alone makes ~/.codex.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
installed() {
  [ -x "$1/claude" ] && [ -x "$1/codex" ] \
    && HOME="$scratch" CLAUDE_CONFIG_DIR="$scratch/claude" "$1/claude" --version 2>/dev/null \
      | grep -qF "$claude_version" \
    && HOME="$scratch" CODEX_HOME="$scratch/codex" "$1/codex" --version 2>/dev/null \
      | grep -qF "$codex_version"
}

if [ -f "$dest/.complete" ] && installed "$bin"; then
  echo "$bin"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "install-agents.sh: npm is missing (install Node.js 20 or later)" >&2
  exit 2
fi

echo "install-agents.sh: installing claude-code $claude_version and codex $codex_version into $dest" >&2
mkdir -p "$cache"
work="$dest.partial.$$"   # one per run: two runs at once never share a half-made tree
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work" "$scratch"' EXIT
cd "$work"
echo '{"name": "turnback-ci-agents", "private": true}' > package.json
npm install --no-audit --no-fund --foreground-scripts \
  "@anthropic-ai/claude-code@$claude_version" "@openai/codex@$codex_version" >&2
if ! installed "$work/node_modules/.bin"; then
  echo "install-agents.sh: the installed commands do not report the pinned versions:" >&2
  "$work/node_modules/.bin/claude" --version >&2 || true
  "$work/node_modules/.bin/codex" --version >&2 || true
  exit 1
fi
touch "$work/.complete"
if [ -f "$dest/.complete" ] && installed "$bin"; then
  echo "install-agents.sh: another run finished first; keeping its install" >&2
else
  rm -rf "$dest"
  mv "$work" "$dest"
fi
echo "$bin"
