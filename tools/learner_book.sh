#!/usr/bin/env bash
# A learner's `make book`: no root, no npm.
#
# Builds the book in a copy of this checkout as an unprivileged user ("learner",
# created if absent), with npm, npx, node, sudo, apt-get and apt replaced on the
# PATH by stubs that fail loudly: if `make book` called any of them, it fails.
# The copy reuses this checkout's .venv read-only (so nothing is downloaded);
# `make book` there must vendor MathJax and mermaid from the committed vendor/
# and build with -W. Then the built pages must equal this checkout's
# _build/html (from `make test`), file for file.
#
# .ci/run runs it as root after `make test`. Run by hand: sudo tools/learner_book.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LEARNER=${LEARNER:-learner}
say() { echo "learner_book: $*"; }

if [ "$(id -u)" != 0 ]; then
  echo "learner_book: must run as root: it creates the user '$LEARNER' and builds the book as that user" >&2
  exit 2
fi
[ -x "$ROOT/.venv/bin/python" ] || { echo "learner_book: no $ROOT/.venv: run make venv first" >&2; exit 2; }
make -C "$ROOT" --no-print-directory venv >/dev/null   # up to date, so the learner's make installs nothing
id -u "$LEARNER" >/dev/null 2>&1 || { useradd --create-home --shell /bin/bash "$LEARNER"; say "created user $LEARNER"; }

WORK=$(mktemp -d /tmp/learner-book.XXXXXX)
chmod 755 "$WORK"
UNDO=()
cleanup() {
  for cmd in "${UNDO[@]}"; do eval "$cmd" || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# The learner must reach the venv and the Python it was made from (pyenv under /root, say):
# grant traverse-only (x) on each folder above them that the learner cannot enter, undone at exit.
grant_traverse() {
  local dir="" part
  IFS=/ read -ra parts <<<"$(dirname "$1")"
  for part in "${parts[@]}"; do
    [ -n "$part" ] || continue
    dir="$dir/$part"
    runuser -u "$LEARNER" -- test -x "$dir" && continue
    if command -v setfacl >/dev/null; then
      setfacl -m "u:$LEARNER:x" "$dir" && UNDO+=("setfacl -x 'u:$LEARNER' '$dir'")
    else
      chmod o+x "$dir" && UNDO+=("chmod o-x '$dir'")
    fi
    say "let $LEARNER traverse $dir for this check (undone at exit)"
  done
}
grant_traverse "$ROOT/.venv/bin/python"
grant_traverse "$(readlink -f "$ROOT/.venv/bin/python")"

# Tools a learner's setup must not need: each stub fails the build if it is called.
mkdir -p "$WORK/forbidden"
for tool in npm npx node sudo apt-get apt; do
  printf '#!/bin/sh\necho "learner_book: make book called %s $*: a learner has no root and no npm" >&2\nexit 97\n' \
    "$tool" >"$WORK/forbidden/$tool"
  chmod 755 "$WORK/forbidden/$tool"
done

# The checkout as it is (tracked and untracked files, mtimes kept), without what is built or installed.
mkdir "$WORK/course" "$WORK/tmp"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard \
   | tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$WORK/course"
ln -s "$ROOT/.venv" "$WORK/course/.venv"
chown -R "$LEARNER:" "$WORK/course" "$WORK/tmp"

say "make book as $LEARNER (uid $(id -u "$LEARNER")), npm/node/sudo/apt stubbed out, in $WORK/course"
start=$SECONDS
runuser -u "$LEARNER" -- env -i HOME="$(getent passwd "$LEARNER" | cut -d: -f6)" LANG=C.UTF-8 TMPDIR="$WORK/tmp" \
  PATH="$WORK/forbidden:/usr/local/bin:/usr/bin:/bin" \
  make -C "$WORK/course" --no-print-directory book
say "built in $((SECONDS - start)) s"

test -f "$WORK/course/_vendor/mathjax/tex-mml-chtml.js" && test -f "$WORK/course/_vendor/mermaid/mermaid.min.js"
if [ -f "$ROOT/_build/html/index.html" ]; then
  if diff -r -q -x .buildinfo "$ROOT/_build/html" "$WORK/course/_build/html"; then
    say "the learner's _build/html is identical to this checkout's"
  else
    echo "learner_book: the learner's book differs from this checkout's _build/html (above)" >&2
    exit 1
  fi
else
  say "no $ROOT/_build/html to compare with (run make book first)"
fi
say "ok: make book needs no root and no npm"
