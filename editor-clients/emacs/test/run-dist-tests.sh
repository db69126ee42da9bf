#!/usr/bin/env bash
# The Emacs package as a user gets it (issue 41): from the package.el archive in DIST/emacs, in a fresh
# user-emacs-directory, with no `turnback` on PATH; then turnback-install-server and turnback-start.
#   test/run-dist-tests.sh DIST        (.ci/release.sh runs it on a copy of dist/)
#   EMACS=/path/to/emacs test/run-dist-tests.sh DIST   another Emacs than the one on PATH
#   TURNBACK_VC_SOURCE=GIT-CHECKOUT ...                  also package-vc-install from that checkout
set -euo pipefail
dist="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
if PATH="$PATH" command -v turnback >/dev/null 2>&1; then
  echo "run-dist-tests.sh: turnback is on PATH ($(command -v turnback)); run it with a PATH without it" >&2
  exit 2
fi
emacs="${EMACS:-emacs}"
homes=()
# package.el starts a gpg-agent daemon in each home's elpa/gnupg: stop it before the home goes
cleanup() {
  for h in "${homes[@]}"; do
    [ -d "$h/elpa/gnupg" ] && command -v gpgconf >/dev/null 2>&1 && gpgconf --homedir "$h/elpa/gnupg" --kill gpg-agent || true
    rm -rf "$h"
  done
}
trap cleanup EXIT
fresh_home() { home="$(mktemp -d /tmp/turnback-emacs-dist.XXXXXX)"; homes+=("$home"); }

fresh_home
TURNBACK_DIST="$dist" "$emacs" -Q --batch \
  --eval "(setq user-emacs-directory \"$home/\" package-user-dir \"$home/elpa\")" \
  -l ert -l "$here/turnback-install-test.el" -f ert-run-tests-batch-and-exit </dev/null

# package-vc-install from a checkout (Emacs 29+), in another fresh user-emacs-directory
if [ -n "${TURNBACK_VC_SOURCE:-}" ]; then
  fresh_home
  "$emacs" -Q --batch \
    --eval "(setq user-emacs-directory \"$home/\" package-user-dir \"$home/elpa\")" \
    -l ert -l "$here/turnback-vc-test.el" -f ert-run-tests-batch-and-exit </dev/null
fi
