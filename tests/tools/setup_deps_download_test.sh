#!/usr/bin/env bash
# tools/setup-deps --download DIR saves the library packages with their dependency closure, minus
# only what g++ pulls in. Stubs of apt-get and apt-cache stand in for Debian's: in their graph
# cmake pulls in libicu72 and libpcre2-8-0 (as Debian's cmake does), the libraries behind the
# -dev packages' .so links, which a GPU image of another distribution does not have (the first
# set-up on an Ubuntu 24.04 GPU image failed to link without them: docs/gpu.md). They must be
# saved; libc6 and libstdc++6, which g++ pulls in, must not be.
#   setup_deps_download_test.sh <source dir>
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/stubs"

# apt-cache depends --recurse <packages>: a package a line, as the real one prints them (its
# dependency lines are indented, and filtered out by setup-deps).
cat >"$work/stubs/apt-cache" <<'STUB'
#!/usr/bin/env bash
case "$1" in
  depends)
    shift
    for arg in "$@"; do
      case "$arg" in
        --*) ;;
        g++) printf 'g++\n  Depends: libc6\nlibc6\nlibstdc++6\ngcc-12-base\n' ;;
        cmake) printf 'cmake\nlibarchive13\nlibxml2\nlibicu72\nlibc6\n' ;;
        libicu-dev) printf 'libicu-dev\n  Depends: libicu72\nlibicu72\nlibc6\nlibstdc++6\n' ;;
        libpcre2-dev) printf 'libpcre2-dev\nlibpcre2-8-0\nlibc6\n' ;;
        *) printf '%s\nlibc6\n' "$arg" ;;
      esac
    done ;;
  policy)
    shift
    for pkg in "$@"; do printf '%s:\n  Installed: (none)\n  Candidate: 1.0-1\n' "$pkg"; done ;;
  *) exit 99 ;;
esac
STUB
# apt-get update: nothing; apt-get download <packages>: a small .deb of each in the current folder.
cat >"$work/stubs/apt-get" <<'STUB'
#!/usr/bin/env bash
args=()
for arg in "$@"; do case "$arg" in -o|-qq|APT::*) ;; *) args+=("$arg") ;; esac; done
case "${args[0]}" in
  update) ;;
  download)
    for pkg in "${args[@]:1}"; do
      root=$(mktemp -d)
      mkdir -p "$root/DEBIAN"
      printf 'Package: %s\nVersion: 1.0-1\nArchitecture: all\nMaintainer: memsweep tests <tests@memsweep.invalid>\nDescription: stub\n' \
        "$pkg" >"$root/DEBIAN/control"
      dpkg-deb --root-owner-group --build "$root" "${pkg}_1.0-1_all.deb" >/dev/null
      rm -rf "$root"
    done ;;
  *) exit 99 ;;
esac
STUB
printf '#!/bin/sh\nexec "$@"\n' >"$work/stubs/sudo"
chmod +x "$work/stubs/"*

fail() { echo "FAIL: $*"; exit 1; }
env PATH="$work/stubs:$PATH" XDG_CACHE_HOME="$work/xdg" \
  "$source_dir/tools/setup-deps" --download "$work/debs" 2>"$work/err" ||
  { cat "$work/err"; fail "--download exited $?"; }
for pkg in libicu72 libpcre2-8-0 libicu-dev libpcre2-dev libboost-dev libgloo-dev; do
  ls "$work/debs/${pkg}_"*.deb >/dev/null 2>&1 || fail "$pkg was not saved: $(ls "$work/debs")"
done
for pkg in libc6 libstdc++6 gcc-12-base; do
  ! ls "$work/debs/${pkg}_"*.deb >/dev/null 2>&1 || fail "$pkg (from g++) was saved"
done
grep -qx "libicu72=1.0-1" "$work/debs/MANIFEST" || fail "MANIFEST does not list libicu72"
echo "ok: $(ls "$work/debs" | grep -c '\.deb$') .deb files, libicu72 and libpcre2-8-0 among them"
