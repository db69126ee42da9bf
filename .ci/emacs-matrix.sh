#!/usr/bin/env bash
# The Emacs client's ERT suite on every Emacs the docs support: 28.2 (Debian bookworm's emacs-nox)
# and 30.1 (bookworm-backports). apt cannot hold both (one emacs-nox package; and apt cannot go back
# from 30.1 to 28.2: emacs-bin-common's postinst fails), so each version's Debian packages
# (emacs-nox, emacs-bin-common, emacs-common, emacs-el) are downloaded with `apt-get download` and
# unpacked into a private prefix, ~/.cache/turnback-ci/emacs/<version>, run through a wrapper that
# points Emacs at it. The machine's own Emacs, any or none, is left as it is. (Emacs 28's
# native-compiled dump crashes at start in another prefix unless the .el sources, emacs-el, are there.)
# Emacs 28 gets Debian's eglot 1.9 (elpa-eglot, unpacked the same way) for the test that runs eglot
# and pylsp beside turnback; Emacs 30 has eglot built in. The package is byte-compiled on each (any
# warning fails), then the two suites run at the same time (they mostly wait on the server), each
# test bounded by TURNBACK_ERT_TEST_TIMEOUT and each whole run by `timeout`. A rerun downloads nothing.
#
#   .ci/emacs-matrix.sh                      both versions
#   EMACS_VERSIONS=30.1 .ci/emacs-matrix.sh  one of them
# Needs `turnback` on PATH (.ci/run puts the project's venv there).
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${TURNBACK_CI_CACHE:-$HOME/.cache/turnback-ci}/emacs"
versions="${EMACS_VERSIONS:-28.2 30.1}"
run_timeout="${EMACS_MATRIX_TIMEOUT:-1500}"   # seconds for one version's whole suite
export TURNBACK_ERT_TEST_TIMEOUT="${TURNBACK_ERT_TEST_TIMEOUT:-120}"
SUDO=""; if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
apt_get() { DEBIAN_FRONTEND=noninteractive $SUDO apt-get -q -o DPkg::Lock::Timeout=600 "$@"; }

suite_of() { case "$1" in 28.2) echo bookworm ;; 30.1) echo bookworm-backports ;; *) echo "unknown Emacs $1" >&2; exit 2 ;; esac; }

ensure_backports_source() {
  if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      | $SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
  fi
}

# The runtime libraries an unpacked emacs-nox needs (its Depends, without the emacs packages).
runtime_libraries() {
  dpkg-deb -f "$1" Depends | tr ',' '\n' | sed 's/([^)]*)//g; s/|.*//; s/^ *//; s/ *$//' \
    | grep -v '^emacs' | grep -v '^$'
}

emacs_of() { echo "$cache/$1/bin/emacs"; }   # the wrapper of VERSION

ready() {  # ready VERSION: nothing is to be installed for it
  local version="$1"
  "$(emacs_of "$version")" --version 2>/dev/null | head -1 | grep -q "GNU Emacs $version\$" || return 1
  [ "$version" != 28.2 ] || [ -d "$cache/$version/eglot" ]
}

prepare() {  # prepare VERSION: the unpacked packages and the wrapper bin/emacs
  local version="$1" suite prefix lisp pdmp packages
  suite="$(suite_of "$version")"
  prefix="$cache/$version"
  rm -rf "$prefix" && mkdir -p "$prefix/debs" "$prefix/root" "$prefix/bin"
  packages="emacs-nox/$suite emacs-bin-common/$suite emacs-common/$suite emacs-el/$suite"
  if [ "$version" = 28.2 ]; then packages="$packages elpa-eglot/bookworm"; fi
  (cd "$prefix/debs" && apt-get -q download $packages 2>&1 | grep -v 'unsandboxed' || true)
  if [ "$(ls "$prefix"/debs/*.deb 2>/dev/null | wc -l)" -lt "$(echo $packages | wc -w)" ]; then
    echo "emacs-matrix.sh: could not download $packages (is bookworm-backports a source?)" >&2
    exit 1
  fi
  for deb in "$prefix"/debs/*.deb; do dpkg-deb -x "$deb" "$prefix/root"; done
  apt_get install -y --no-install-recommends $(runtime_libraries "$prefix"/debs/emacs-nox_*.deb)
  rm -rf "$prefix/debs"
  if [ "$version" = 28.2 ]; then
    mv "$(ls -d "$prefix"/root/usr/share/emacs/site-lisp/elpa-src/eglot-*)" "$prefix/eglot"
  fi
  lisp="$prefix/root/usr/share/emacs/$version"
  pdmp="$(find "$prefix/root/usr/libexec" -name '*.pdmp' | head -1)"
  cat > "$prefix/bin/emacs" <<WRAPPER
#!/bin/sh
# Emacs $version from Debian's packages unpacked in $prefix/root (.ci/emacs-matrix.sh).
export EMACSLOADPATH="$lisp/lisp" EMACSDATA="$lisp/etc" EMACSDOC="$lisp/etc" EMACSPATH="\$(dirname "$pdmp")"
exec "$prefix/root/usr/bin/emacs-nox" --dump-file="$pdmp" "\$@"
WRAPPER
  chmod +x "$prefix/bin/emacs"
}

missing=""
for version in $versions; do ready "$version" || missing=1; done
if [ -n "$missing" ] || ! command -v pylsp >/dev/null 2>&1; then
  ensure_backports_source
  apt_get update
  apt_get install -y --no-install-recommends python3-pylsp
fi
for version in $versions; do
  ready "$version" || prepare "$version"
  echo "== $("$(emacs_of "$version")" --version | head -1): $(emacs_of "$version")"
done

# Byte-compile the package on each version: any warning fails (issue 40: none on Emacs 28 or 30).
for version in $versions; do
  build="$(mktemp -d)"
  cp editor-clients/emacs/*.el "$build/"
  (cd "$build" && "$(emacs_of "$version")" -Q --batch -L . --eval '(setq byte-compile-error-on-warn t)' \
     -f batch-byte-compile $(ls *.el | grep -v -- '-pkg\.el$')) \
    || { echo "== Emacs $version: the package does not byte-compile cleanly" >&2; exit 1; }
  rm -rf "$build"
  echo "== Emacs $version: byte-compiled with no warning"
done

logs="$(mktemp -d)"
declare -A pids
for version in $versions; do
  eglot_dir=""
  if [ "$version" = 28.2 ]; then eglot_dir="$cache/$version/eglot"; fi
  EMACS="$(emacs_of "$version")" TURNBACK_TEST_LOAD_PATH="$eglot_dir" TURNBACK_REQUIRE_EGLOT=1 \
    timeout --kill-after=30 "$run_timeout" editor-clients/emacs/run-tests.sh >"$logs/$version.log" 2>&1 &
  pids[$version]=$!
done
status=0
summary=""
for version in $versions; do
  code=0; wait "${pids[$version]}" || code=$?
  echo "== Emacs $version: the ERT suite (exit $code)"
  cat "$logs/$version.log"
  if [ "$code" = 124 ]; then echo "== Emacs $version: the whole run passed ${run_timeout}s and was stopped" >&2; fi
  [ "$code" = 0 ] || status=1
  summary="$summary
Emacs $version: $(grep -h '^Ran ' "$logs/$version.log" || echo "no result (exit $code)")"
done
rm -rf "$logs"
echo "== Emacs matrix:$summary"
exit "$status"
