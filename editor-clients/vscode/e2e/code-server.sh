#!/usr/bin/env bash
# Builds code-server (VS Code served to a browser) from the npm registry, once per version, into a
# cache OUTSIDE the clone, and prints the path of its entry script. A rerun on the same machine finds
# the cache and returns at once; a fresh machine builds it (a few minutes).
#
# Why by hand: code-server's own post-install builds native modules AND downloads ripgrep from the
# internet, which is not reachable here. So: install with --ignore-scripts, put the distribution's
# `rg` where @vscode/ripgrep looks, rebuild the native modules, then do the post-install's remaining
# steps (see postinstall.sh in the package) ourselves.
#
# Needs: node 20 (code-server 4.100.x refuses others), build-essential, pkg-config, libkrb5-dev, rg.
set -euo pipefail

version="${CODE_SERVER_VERSION:-4.100.3}"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" != 20 ]; then
  echo "code-server.sh: code-server $version needs Node 20, this is Node $node_major" >&2
  exit 2
fi
cache="${TURNBACK_CI_CACHE:-$HOME/.cache/turnback-ci}"
dest="$cache/code-server-$version-node$node_major"
entry="$dest/node_modules/code-server/out/node/entry.js"
if [ -f "$dest/.complete" ] && [ -f "$entry" ]; then
  echo "$entry"
  exit 0
fi
rg_bin="$(command -v rg || true)"
if [ -z "$rg_bin" ]; then
  echo "code-server.sh: ripgrep (rg) is missing: apt-get install ripgrep" >&2
  exit 2
fi

echo "code-server.sh: building code-server $version into $dest (first run on this machine)" >&2
mkdir -p "$cache"
work="$dest.partial.$$"   # one per build: two runs at once never share a half-built tree
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
cd "$work"
echo '{"name": "turnback-ci-code-server", "private": true}' > package.json
npm install --ignore-scripts --no-audit --no-fund "code-server@$version" >&2

cd node_modules/code-server/lib/vscode
npm install --omit=dev --ignore-scripts --no-audit --no-fund >&2
# @vscode/ripgrep's post-install skips its download when bin/ exists.
mkdir -p node_modules/@vscode/ripgrep/bin
cp "$rg_bin" node_modules/@vscode/ripgrep/bin/rg
npm_config_yes=true npm rebuild >&2
# What postinstall.sh would have done after its npm install.
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sfn code-linux.sh code-server)
(cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
(cd extensions && npm install --omit=dev --no-audit --no-fund >&2)
# argon2 is hoisted to the top node_modules, so it is rebuilt from there.
cd "$work"
npm rebuild argon2 >&2
node "$work/node_modules/code-server/out/node/entry.js" --version >&2

touch "$work/.complete"
if [ -f "$dest/.complete" ]; then
  echo "code-server.sh: another run finished first; keeping its build" >&2
else
  rm -rf "$dest"
  mv "$work" "$dest"
fi
echo "$entry"
