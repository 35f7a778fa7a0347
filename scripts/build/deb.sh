#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make deb: Debian packages of Tether for one ARCH, from the tree `make install ARCH=...
# PREFIX=$BUILD_DIR/deb/ARCH/installed` wrote (the Makefile does that first), into
# $BUILD_DIR/deb/:
#   libtether0_V_DEBARCH.deb     /usr/lib/MULTIARCH/libtether.so.0 (SONAME libtether.so.0)
#   libtether-dev_V_DEBARCH.deb  tether.h, libtether.a, libtether.so, pkg-config and CMake
#                                files (prefix /usr, the multiarch library directory), the
#                                README and docs/*.md in /usr/share/doc/libtether-dev
#   tether-edge_V_amd64.deb      (x86_64 only) /usr/bin/tether-edge; contrib/tether-edge.service
#                                as an example in /usr/share/doc/tether-edge (not enabled)
# Both library packages are Multi-Arch: same, so an arm64 -dev installs beside the amd64 one
# for cross builds. Depends come from dpkg-shlibdeps (libc6, libev4 and libsodium23, with
# the versions their symbols need). Usage: scripts/build/deb.sh ARCH VERSION. DEB_MAINTAINER
# sets the Maintainer.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/build/arch.sh
. scripts/build/arch.sh
[ $# -eq 2 ] || { echo "usage: scripts/build/deb.sh ARCH VERSION" >&2; exit 2; }
arch=$1 version=$2
tether_arch "$arch"
fail() { echo "deb: $*" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" > /dev/null || fail "$tool is missing (make deps)"
done
build=${BUILD_DIR:-build}/deb
work=$build/$arch
installed=$work/installed
[ -f "$installed/lib/libtether.so.0" ] || fail "no install in $installed (make deb installs it first)"
maintainer=${DEB_MAINTAINER:-Tether maintainers <maintainers@tether.invalid>}
# Reproducible: file times in the packages are clamped to the last commit's.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2> /dev/null || date +%s)
  export SOURCE_DATE_EPOCH
fi
libdir=usr/lib/$MULTIARCH

rm -rf "$work/debian"
mkdir -p "$work/debian"
tree() { echo "$work/debian/$1"; }
# The changelog Debian wants of a native package: one entry, this version (the same bytes
# for every architecture, as Multi-Arch: same requires).
changelog=$work/changelog.gz
{
  printf 'tether (%s) unstable; urgency=medium\n\n' "$version"
  printf '  * Built from the Tether source tree with make deb.\n\n'
  printf ' -- %s  %s\n' "$maintainer" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$changelog"
doc() { # PACKAGE: its /usr/share/doc directory, with the copyright file and the changelog
  install -d "$(tree "$1")/usr/share/doc/$1"
  install -m 644 packaging/debian/copyright "$(tree "$1")/usr/share/doc/$1/copyright"
  install -m 644 "$changelog" "$(tree "$1")/usr/share/doc/$1/changelog.gz"
}

# libtether0
lib0=$(tree libtether0)
install -d "$lib0/$libdir"
install -m 644 "$installed/lib/libtether.so.0" "$lib0/$libdir/"
# Its exports stay (they are the dynamic symbols); the rest of the symbol table goes.
"${CROSS}strip" --strip-unneeded --remove-section=.comment "$lib0/$libdir/libtether.so.0"
doc libtether0

# libtether-dev
dev=$(tree libtether-dev)
install -d "$dev/usr/include" "$dev/$libdir/pkgconfig"
install -m 644 "$installed/include/tether.h" "$dev/usr/include/"
install -m 644 "$installed/lib/libtether.a" "$dev/$libdir/"
ln -s libtether.so.0 "$dev/$libdir/libtether.so"
sed -e 's|@PREFIX@|/usr|' -e "s|@LIBDIR@|lib/$MULTIARCH|" -e "s|@VERSION@|$version|" tether.pc.in \
  > "$dev/$libdir/pkgconfig/tether.pc"
scripts/build/cmake-config.sh "$dev/usr" "lib/$MULTIARCH" "$version" "$arch"
doc libtether-dev
install -m 644 README.md "$dev/usr/share/doc/libtether-dev/"
# Every document of docs/, whoever added it (README.md links to docs/...).
shopt -s nullglob
docs=(docs/*.md docs/*.png)
shopt -u nullglob
if [ ${#docs[@]} -gt 0 ]; then
  install -d "$dev/usr/share/doc/libtether-dev/docs"
  install -m 644 "${docs[@]}" "$dev/usr/share/doc/libtether-dev/docs/"
fi

# tether-edge, for the host only
packages=(libtether0 libtether-dev)
if [ "$arch" = x86_64 ]; then
  [ -x "$installed/bin/tether-edge" ] || fail "no tether-edge in $installed/bin"
  edge=$(tree tether-edge)
  install -d "$edge/usr/bin"
  install -m 755 "$installed/bin/tether-edge" "$edge/usr/bin/"
  doc tether-edge
  if [ -f contrib/tether-edge.service ]; then
    install -m 644 contrib/tether-edge.service "$edge/usr/share/doc/tether-edge/"
  fi
  packages+=(tether-edge)
fi

# dpkg-shlibdeps reads debian/control for the packages' names.
{
  printf 'Source: tether\n\n'
  for p in "${packages[@]}"; do printf 'Package: %s\nArchitecture: any\n\n' "$p"; done
} > "$work/debian/control"
shlibdeps() { # FILE: the Depends its libraries need
  local out
  out=$(cd "$work" && DEB_HOST_ARCH=$DEBARCH dpkg-shlibdeps -O -e "${1#"$work"/}" 2> shlibdeps.log) ||
    { cat "$work/shlibdeps.log" >&2; fail "dpkg-shlibdeps failed on $1"; }
  echo "${out#shlibs:Depends=}"
}

control() { # PACKAGE SECTION DEPENDS MULTIARCH SUMMARY DESCRIPTION
  local root size
  root=$(tree "$1")
  # Debian's permissions, whatever the umask was.
  find "$root" -type d -exec chmod 755 {} +
  find "$root" -type f ! -path '*/usr/bin/*' -exec chmod 644 {} +
  size=$(du -sk --apparent-size "$root" | cut -f1)
  install -d "$root/DEBIAN"
  {
    echo "Package: $1"
    echo "Source: tether"
    echo "Version: $version"
    echo "Architecture: $DEBARCH"
    echo "Maintainer: $maintainer"
    echo "Installed-Size: $size"
    echo "Depends: $3"
    [ -n "$4" ] && echo "Multi-Arch: $4"
    echo "Section: $2"
    echo "Priority: optional"
    echo "Description: $5"
    echo "$6" | sed -e 's/^$/./' -e 's/^/ /'
  } > "$root/DEBIAN/control"
  (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
    xargs -0 -r md5sum) > "$root/DEBIAN/md5sums"
  chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
}

about="Tether keeps a device joined to a real-time channel (or logged in to a
messaging session) through an edge server: it reports every connection state
change with its reason, rejoins on its own after interruptions, notices when
other members join or go silent, and runs its thresholds on the host's libev
loop. The core is Embedded Swift: the library needs only libc, libev and
libsodium."

control libtether0 libs "$(shlibdeps "$lib0/$libdir/libtether.so.0")" same \
  "connection core for devices (shared library)" "$about

This package holds the shared library, libtether.so.0."
# The library's own shlibs: what a program linked with it depends on.
echo "libtether 0 libtether0 (>= $version)" > "$lib0/DEBIAN/shlibs"
echo "activate-noawait ldconfig" > "$lib0/DEBIAN/triggers"
chmod 644 "$lib0/DEBIAN/shlibs" "$lib0/DEBIAN/triggers"

control libtether-dev libdevel "libtether0 (= $version), libev-dev, libsodium-dev" same \
  "connection core for devices (development files)" "$about

This package holds the C header tether.h, the static library (a program links
only the code of the profile it calls), and the pkg-config (tether) and CMake
(find_package(Tether), Tether::tether) files, with the README and the
documents of docs/."

if [ "$arch" = x86_64 ]; then
  control tether-edge net "$(shlibdeps "$edge/usr/bin/tether-edge")" "" \
    "Tether's reference UDP edge server" "tether-edge is the edge server Tether devices join channels and log in
through, with the admin commands (token, kick). A systemd unit to copy and
adapt is in /usr/share/doc/tether-edge when the source tree had one (it is
not enabled)."
fi

for p in "${packages[@]}"; do
  deb=$build/${p}_${version}_$DEBARCH.deb
  dpkg-deb --root-owner-group -Zxz --build "$(tree "$p")" "$deb" > /dev/null
  echo "deb: $deb ($(du -k "$deb" | cut -f1) KiB)"
done
