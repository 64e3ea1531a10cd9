#!/usr/bin/env bash
# tools/setup-deps --from DIR sets up a machine without package access: it unpacks every .deb in
# DIR into a prefix (gloo's headers into the cache, where the set-up without a flag puts them),
# writes the prefix's path for tools/build, and prints the torch folder, without apt-get, sudo,
# pip or the network: stubs of those come first on PATH and fail the test if called. A later run
# without a flag uses the prefix and installs nothing either. --from a missing folder, or one
# without .deb files, exits 2 naming it.
#   setup_deps_offline_test.sh <source dir> <torch folder>
set -euo pipefail
source_dir=$1
torch_dir=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Stubs: any call is recorded and fails.
mkdir -p "$work/stubs"
for tool in apt-get apt-cache apt sudo pip pip3 curl wget; do
  printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 99\n' "$tool" "$work/stub-calls" \
    >"$work/stubs/$tool"
  chmod +x "$work/stubs/$tool"
done
offline_env=(env -u VIRTUAL_ENV -u CONDA_PREFIX -u MEMSWEEP_GLOO_INCLUDE PATH="$work/stubs:$PATH"
             XDG_CACHE_HOME="$work/xdg" MEMSWEEP_TORCH="$torch_dir")

# make_deb <package> <file under the package root> <contents>: a .deb in $work/debs.
make_deb() {
  local root="$work/pkg/$1"
  mkdir -p "$root/DEBIAN" "$(dirname "$root/$2")"
  printf 'Package: %s\nVersion: 1.0-1\nArchitecture: all\nMaintainer: memsweep tests <tests@memsweep.invalid>\nDescription: memsweep offline set-up probe\n' \
    "$1" >"$root/DEBIAN/control"
  echo "$3" >"$root/$2"
  mkdir -p "$work/debs"
  dpkg-deb --root-owner-group --build "$root" "$work/debs/$1_1.0-1_all.deb" >/dev/null
}
make_deb memsweep-offline-probe usr/include/memsweep-offline-probe.h "#define MEMSWEEP_PROBE 1"
make_deb libgloo-dev usr/include/gloo/config.h "#define GLOO_PROBE 1"

fail() { echo "FAIL: $*"; exit 1; }
# setup_deps <arguments>...: runs tools/setup-deps offline; stdout in $out, stderr in $err, the
# exit status in $code.
setup_deps() {
  set +e
  out=$("${offline_env[@]}" "$source_dir/tools/setup-deps" "$@" 2>"$work/err")
  code=$?
  set -e
  err=$(cat "$work/err")
  echo "$err"
}
prefix="$work/prefix"
setup_deps --from "$work/debs" --prefix "$prefix"
[ "$code" -eq 0 ] || fail "--from exited $code"
[ ! -s "$work/stub-calls" ] || fail "--from called: $(cat "$work/stub-calls")"
[ "$out" = "$torch_dir" ] || fail "--from printed '$out', expected the torch folder $torch_dir"
grep -qx "#define MEMSWEEP_PROBE 1" "$prefix/usr/include/memsweep-offline-probe.h" ||
  fail "the probe header is not in the prefix"
grep -qx "#define GLOO_PROBE 1" "$work/xdg/memsweep/gloo-headers/include/gloo/config.h" ||
  fail "gloo's header is not in <cache>/gloo-headers/include"
[ ! -e "$prefix/usr/include/gloo" ] || fail "gloo's headers were unpacked into the prefix"
[ "$(cat "$work/xdg/memsweep/prefix-path")" = "$prefix" ] ||
  fail "<cache>/prefix-path does not name $prefix"

# Without a flag, the prefix is used: no apt, no pip.
setup_deps
[ "$code" -eq 0 ] || fail "setup-deps after --from exited $code"
[ ! -s "$work/stub-calls" ] || fail "setup-deps after --from called: $(cat "$work/stub-calls")"
[ "$out" = "$torch_dir" ] || fail "setup-deps after --from printed '$out'"

# expect_refusal <pattern> <setup-deps arguments>...: exit 2, the message has the pattern.
expect_refusal() {
  local pattern=$1
  shift
  setup_deps "$@"
  [ "$code" -eq 2 ] || fail "exit code $code for $*, expected 2"
  grep -qF -- "$pattern" <<<"$err" || fail "'$pattern' not in the message for $*"
}
expect_refusal "/nonexistent" --from /nonexistent
mkdir -p "$work/empty"
expect_refusal "no .deb files in $work/empty" --from "$work/empty"
mkdir -p "$work/theirs" && touch "$work/theirs/keep-me"
expect_refusal "$work/theirs" --from "$work/debs" --prefix "$work/theirs"
[ -f "$work/theirs/keep-me" ] || fail "a folder setup-deps did not make was emptied"
[ ! -s "$work/stub-calls" ] || fail "called: $(cat "$work/stub-calls")"
echo "setup-deps --from unpacks a folder of .deb files without apt, sudo or the network: OK"
