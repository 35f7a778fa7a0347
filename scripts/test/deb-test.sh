#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make deb-test: the packages of make deb, checked as a Debian user would meet them. For
# each ARCH given (the Makefile builds its packages first):
#   - dpkg-deb --info: Package, Version, Architecture, Multi-Arch, and Depends that name
#     the package of every library the packaged binaries need (libev4, libsodium23, libc6),
#     libtether0 (= version), libev-dev and libsodium-dev for the -dev package;
#   - dpkg-deb --contents: exactly the files expected (docs/*.md as the tree has them now);
#   - the packaged libtether.so.0: its SONAME and its machine (readelf);
#   - libtether0 and libtether-dev unpacked (dpkg-deb -x) into a scratch root, and
#     examples/cmake/app.c built against that root with pkg-config (PKG_CONFIG_SYSROOT_DIR)
#     and with CMake (CMAKE_PREFIX_PATH, the toolchain file for ARM), static and shared,
#     and run (ARM under qemu-user) with the unpacked libtether.so.0;
#   - for x86_64, tether-edge unpacked and run (--help);
#   - then apt-get install --simulate of every package checked at once: their Depends are
#     met from the Debian archive, and the architectures' library packages go together;
#   - and lintian, when it is installed (not by make deps: it is large): no error or
#     warning (but tether-edge's missing manual page).
# Usage: scripts/test/deb-test.sh VERSION ARCH...
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/build/arch.sh
. scripts/build/arch.sh
[ $# -ge 2 ] || { echo "usage: scripts/test/deb-test.sh VERSION ARCH..." >&2; exit 2; }
version=$1
shift
debs=$(pwd)/${BUILD_DIR:-build}/deb
fail() { echo "deb-test: $*" >&2; exit 1; }
CFLAGS_STRICT=(-std=c99 -Wall -Wextra -Wpedantic -Werror)

field() { dpkg-deb --field "$1" "$2"; }
check_field() { # DEB FIELD EXPECTED
  local got
  got=$(field "$1" "$2")
  [ "$got" = "$3" ] || fail "$(basename "$1"): $2 is '$got', not '$3'"
}
contents() { # DEB: its paths, one a line, sorted (directories end with /)
  dpkg-deb --contents "$1" | awk '{ sub(/^\.\//, "", $6); print $6 }' | grep -v '^$' | sort
}
package_of() { # a NEEDED library: the Debian package that holds it
  case "$1" in
    libev.so.4) echo libev4 ;;
    libsodium.so.23) echo libsodium23 ;;
    libnats.so.3.4) echo libnats3.4 ;;
    libc.so.6 | libm.so.6 | ld-linux*) echo libc6 ;;
    libstdc++.so.6) echo libstdc++6 ;;
    libgcc_s.so.1) echo libgcc-s1 ;;
    *) echo "unknown:$1" ;;
  esac
}
check_depends() { # DEB BINARY: Depends names the package of each library BINARY needs
  local depends lib pkg
  depends=$(field "$1" Depends)
  for lib in $(readelf -d "$2" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p'); do
    pkg=$(package_of "$lib")
    # shellcheck disable=SC2001
    sed 's/ *([^)]*)//g; s/, */\n/g' <<< "$depends" | grep -xF "$pkg" > /dev/null ||
      fail "$(basename "$1"): needs $lib but Depends '$depends' has no $pkg"
  done
}
expect_list() { # DEB FILE...: the package holds exactly these paths
  local deb=$1
  shift
  diff <(printf '%s\n' "$@" | sort) <(contents "$deb") > /dev/null ||
    { diff <(printf '%s\n' "$@" | sort) <(contents "$deb") >&2 || true
      fail "$(basename "$deb"): not the expected files (< expected, > packaged)"; }
}
run_app() { # LABEL APP LIBDIR: run it with the unpacked libtether.so.0 and check it said ok
  local out loaded
  out=$(LD_LIBRARY_PATH=$3 "${QEMU[@]}" "$2" 2>&1) || { echo "$out"; fail "$1: failed"; }
  [ "$(echo "$out" | tail -1)" = ok ] || { echo "$out"; fail "$1: did not say ok"; }
  if readelf -d "$2" | grep 'NEEDED.*libtether\.so\.0' > /dev/null; then
    # The program's own loader says which libtether.so.0 it takes (what ldd asks it).
    local interp
    interp=$(readelf -l "$2" | sed -nE 's/.*program interpreter: (.*)\]/\1/p')
    [ -n "$CROSS" ] && [ -e "/usr/$MULTIARCH$interp" ] && interp=/usr/$MULTIARCH$interp
    loaded=$("${QEMU[@]}" "$interp" --library-path "$3" --list "$2" | grep 'libtether\.so\.0' || true)
    [[ "$loaded" == *"=> $3/libtether.so.0 "* ]] || fail "$1: loaded $loaded, not the unpacked one"
  fi
}

all=()
for arch in "$@"; do
  tether_arch "$arch"
  lib0=$debs/libtether0_${version}_$DEBARCH.deb
  dev=$debs/libtether-dev_${version}_$DEBARCH.deb
  ma=usr/lib/$MULTIARCH
  for deb in "$lib0" "$dev"; do
    [ -f "$deb" ] || fail "$deb is missing (make deb ARCH=$arch)"
    check_field "$deb" Version "$version"
    check_field "$deb" Architecture "$DEBARCH"
    check_field "$deb" Multi-Arch same
  done
  check_field "$lib0" Package libtether0
  check_field "$dev" Package libtether-dev
  check_field "$dev" Depends "libtether0 (= $version), libev-dev, libsodium-dev"
  expect_list "$lib0" usr/ usr/lib/ "$ma/" "$ma/libtether.so.0" usr/share/ usr/share/doc/ \
    usr/share/doc/libtether0/ usr/share/doc/libtether0/copyright \
    usr/share/doc/libtether0/changelog.gz
  docs=()
  for f in docs/*.md docs/*.png; do [ -f "$f" ] && docs+=("usr/share/doc/libtether-dev/$f"); done
  [ ${#docs[@]} -gt 0 ] && docs+=(usr/share/doc/libtether-dev/docs/)
  expect_list "$dev" usr/ usr/include/ usr/include/tether.h usr/lib/ "$ma/" "$ma/cmake/" \
    "$ma/cmake/Tether/" "$ma/cmake/Tether/TetherConfig.cmake" \
    "$ma/cmake/Tether/TetherConfigVersion.cmake" "$ma/libtether.a" "$ma/libtether.so" \
    "$ma/pkgconfig/" "$ma/pkgconfig/tether.pc" usr/share/ usr/share/doc/ \
    usr/share/doc/libtether-dev/ usr/share/doc/libtether-dev/README.md \
    usr/share/doc/libtether-dev/copyright usr/share/doc/libtether-dev/changelog.gz "${docs[@]}"
  dpkg-deb --contents "$dev" | grep " ./$ma/libtether.so -> libtether.so.0\$" > /dev/null ||
    fail "$(basename "$dev"): libtether.so is not a link to libtether.so.0"

  root=$debs/test/$arch/root
  rm -rf "$debs/test/$arch"
  mkdir -p "$root"
  dpkg-deb -x "$lib0" "$root"
  dpkg-deb -x "$dev" "$root"
  so=$root/$ma/libtether.so.0
  readelf -d "$so" | grep 'SONAME.*\[libtether\.so\.0\]' > /dev/null || fail "$(basename "$lib0"): SONAME is not libtether.so.0"
  readelf -h "$so" | grep "Machine: *$ELF_MACHINE\$" > /dev/null || fail "$(basename "$lib0"): not $ELF_MACHINE code"
  check_depends "$lib0" "$so"
  grep -qx 'prefix=/usr' "$root/$ma/pkgconfig/tether.pc" &&
    grep -qx "libdir=\${prefix}/lib/$MULTIARCH" "$root/$ma/pkgconfig/tether.pc" ||
    fail "$(basename "$dev"): tether.pc does not point at /usr and /$ma"
  echo "deb-test: $arch: $(basename "$lib0") ($(field "$lib0" Depends); SONAME libtether.so.0)," \
    "$(basename "$dev") ($(contents "$dev" | grep -vc '/$') files); fields and file lists as expected"

  # pkg-config against the unpacked root (ALLOW_SYSTEM_*: /usr/include and the multiarch
  # directory are the system's own, which pkg-config would otherwise leave out).
  flags=$(PKG_CONFIG_LIBDIR=$root/$ma/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root \
    PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 pkg-config --cflags --libs tether)
  [[ "$flags" == *"-I$root/usr/include"* && "$flags" == *"-L$root/$ma"* ]] ||
    fail "$arch: pkg-config gave '$flags'"
  # shellcheck disable=SC2086
  "${CROSS}gcc" "${CFLAGS_STRICT[@]}" examples/cmake/app.c -o "$debs/test/$arch/app-pkg-config" $flags
  run_app "$arch pkg-config app" "$debs/test/$arch/app-pkg-config" "$root/$ma"

  # CMake against the unpacked root, static and shared.
  toolchain=()
  [ -n "$CROSS" ] && toolchain=(-DCMAKE_TOOLCHAIN_FILE=$(pwd)/cmake/toolchains/$MULTIARCH.cmake)
  for kind in static shared; do
    build=$debs/test/$arch/cmake-$kind
    opts=()
    [ "$kind" = shared ] && opts=(-DTETHER_USE_STATIC=OFF)
    cmake -S examples/cmake -B "$build" "${toolchain[@]}" -DCMAKE_PREFIX_PATH="$root/usr" \
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "${opts[@]}" > "$build.log" 2>&1 &&
      cmake --build "$build" >> "$build.log" 2>&1 || { cat "$build.log"; fail "$arch: CMake $kind build failed"; }
    grep -q "Tether_DIR:PATH=$root/$ma/cmake/Tether" "$build/CMakeCache.txt" ||
      fail "$arch: CMake $kind found $(grep Tether_DIR "$build/CMakeCache.txt"), not the unpacked one"
    run_app "$arch CMake $kind app" "$build/tether-app" "$root/$ma"
  done
  echo "deb-test: $arch: examples/cmake/app.c built against the unpacked -dev with pkg-config" \
    "and with CMake (static, shared) and run$([ ${#QEMU[@]} -gt 0 ] && echo " under ${QEMU[0]}"): ok"

  if [ "$arch" = x86_64 ]; then
    edge=$debs/tether-edge_${version}_$DEBARCH.deb
    [ -f "$edge" ] || fail "$edge is missing (make deb)"
    check_field "$edge" Package tether-edge
    check_field "$edge" Architecture "$DEBARCH"
    extra=()
    [ -f contrib/tether-edge.service ] &&
      extra=(usr/share/doc/tether-edge/tether-edge.service)
    expect_list "$edge" usr/ usr/bin/ usr/bin/tether-edge usr/share/ usr/share/doc/ \
      usr/share/doc/tether-edge/ usr/share/doc/tether-edge/copyright \
      usr/share/doc/tether-edge/changelog.gz "${extra[@]}"
    dpkg-deb -x "$edge" "$root"
    check_depends "$edge" "$root/usr/bin/tether-edge"
    "$root/usr/bin/tether-edge" --help > /dev/null || fail "the packaged tether-edge does not run"
    echo "deb-test: $(basename "$edge") ($(field "$edge" Depends)): files as expected, runs"
    all+=("$edge")
  fi
  all+=("$lib0" "$dev")
done

apt-get install --simulate "${all[@]}" > "$debs/test/apt.log" 2>&1 ||
  { cat "$debs/test/apt.log"; fail "apt-get would not install them"; }
installs=$(grep -c '^Inst \(libtether\|tether-edge\)' "$debs/test/apt.log" || true)
[ "$installs" = ${#all[@]} ] || { cat "$debs/test/apt.log"; fail "apt-get would install $installs of ${#all[@]}"; }
echo "deb-test: apt-get install --simulate ./*.deb: all ${#all[@]} packages installable together"
if command -v lintian > /dev/null; then
  lintian --fail-on error,warning --suppress-tags no-manual-page --tag-display-limit 0 \
    "${all[@]}" > "$debs/test/lintian.log" 2>&1 ||
    { grep -v 'root privileges' "$debs/test/lintian.log"; fail "lintian found errors or warnings"; }
  echo "deb-test: lintian: no error or warning in the ${#all[@]} packages"
else
  echo "deb-test: lintian is not installed: not run (apt-get install lintian to run it here)"
fi
