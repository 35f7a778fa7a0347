#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What protocol version 2 costs the device, in aarch64 text (docs/PROTOCOL.md §12.16).
# Usage: scripts/check/v2-device-size.sh [ARCH]   (aarch64, the default; or x86_64, armv7)
#
# Builds one probe twice, from the tree, as scripts/build/build-lib.sh builds the library
# (Embedded Swift, -Osize, swiftc's IR optimized again by the toolchain's LLVM with every
# definition internal, one section per function and datum, `ld -r --gc-sections` from the
# probe's entry points): both sessions (Sources/TetherCore) driven through every entry point
# a driver calls, once on version 1's wire (V1.swift) and once through SecureLink (V2.swift),
# over a stand-in seam of extern C functions (ProbeCrypto.swift: libsodium's code is not
# Tether's text). The probe's sources are in scripts/check/v2-size/ and never ship.
# Prints both figures, the difference (the device side of version 2), and where the
# difference is: the layer, the handshake, sealed data, the stand-in seam, and the rest
# (the standard library's specializations, outlined code, constants). V2_SIZE_TOP=N also
# lists the N largest functions of version 2.
set -euo pipefail
cd "$(dirname "$0")/../.."
arch=${1:-aarch64}
case "$arch" in
  aarch64)
    target=aarch64-none-none-elf ; prefix=aarch64-linux-gnu- ;
    cross=(-Xcc -I/usr/aarch64-linux-gnu/include -Xcc -I/usr/include -Xcc -D__linux__) ;
    codegen_only=(-mllvm -aarch64-use-tbi -mno-global-merge -mllvm -machine-outliner-reruns=1) ;;
  x86_64)
    target=x86_64-unknown-linux-gnu ; prefix="" ; cross=() ; codegen_only=() ;;
  armv7)
    # -O, as build-lib.sh builds armv7 (its comment says why).
    target=armv7-none-none-eabi ; prefix=arm-linux-gnueabihf- ;
    cross=(-Xcc -mfloat-abi=hard -Xcc -mfpu=vfpv3-d16 -Xcc -I/usr/arm-linux-gnueabihf/include
      -Xcc -I/usr/include -Xcc -D__linux__) ;
    codegen_only=(-mfloat-abi=hard -mfpu=vfpv3-d16 -mno-global-merge) ;;
  *) echo "v2-device-size: unknown ARCH '$arch' (known: aarch64, x86_64, armv7)" >&2; exit 2 ;;
esac
optimize=-Osize
[ "$arch" = armv7 ] && optimize=-O
out=${BUILD_DIR:-build}/v2-size/$arch
probe=scripts/check/v2-size
mkdir -p "$out"
clang=$(dirname "$(readlink -f "$(command -v swiftc)")")/clang
core=$(find Sources/TetherCore -name '*.swift' | sort)
entries=(probe_channel_receive probe_channel_advance probe_channel_join probe_login_receive
  probe_login_advance probe_login_login)

build() {  # build VARIANT: $out/VARIANT.o, only what the entry points reach
  local variant=$1 extra=()
  [ "$variant" = v2 ] && extra=("$probe/ProbeCrypto.swift")
  # shellcheck disable=SC2086
  swiftc -enable-experimental-feature Embedded -enable-experimental-feature Extern -wmo \
    -parse-as-library "$optimize" -target "$target" "${cross[@]}" -Xfrontend -internalize-at-link \
    -module-name Tether -package-name tether $core "$probe/Sessions.swift" \
    "$probe/$(echo "$variant" | tr v V).swift" "${extra[@]}" -emit-ir -o "$out/$variant-swift.ll"
  "$clang" -S -emit-llvm -target "$target" -Oz "$out/$variant-swift.ll" -o "$out/$variant-opt.ll"
  sed -E -e 's/^define (internal|private) /define hidden /' \
    -e 's/^(@("[^"]*"|[^ ]+) = )(internal|private) /\1hidden /' "$out/$variant-opt.ll" \
    > "$out/$variant.ll"
  perl -i -pe 's{@"([^"]*)"}{ (my $n = $1) =~ tr/ /_/; "\@\"$n\"" }ge' "$out/$variant.ll"
  "$clang" -c -target "$target" "${codegen_only[@]}" -Oz -Xclang -disable-llvm-passes \
    -ffunction-sections -fdata-sections -fno-addrsig -fPIC "$out/$variant.ll" -o "$out/$variant-all.o"
  # shellcheck disable=SC2046
  "${prefix}ld" -r --gc-sections $(printf -- '-u %s ' "${entries[@]}") "$out/$variant-all.o" \
    -o "$out/$variant.o"
}
build v1
build v2
python3 - "$out" "${prefix}size" "${V2_SIZE_TOP:-0}" <<'PY'
import subprocess, sys
out, size, top = sys.argv[1], sys.argv[2], int(sys.argv[3])

def text(variant):
    line = subprocess.run([size, f'{out}/{variant}.o'], capture_output=True, text=True,
                          check=True).stdout.splitlines()[1]
    return int(line.split()[0])

def functions(variant):
    rows = []
    for line in subprocess.run([size, '-A', f'{out}/{variant}.o'], capture_output=True,
                               text=True, check=True).stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[0].startswith('.text'):
            rows.append((int(p[1]), p[0][6:] or '.text'))
    names = subprocess.run(['swift', 'demangle', '--simplified'],
                           input='\n'.join(n for _, n in rows), capture_output=True,
                           text=True, check=True).stdout.splitlines()
    return [(s, n) for (s, _), n in zip(rows, names)]

areas = [
    ('stand-in seam (probe)', ('ProbeCrypto', 'ProbeCipher', 'filled(')),
    ("probe's entry points, what they inline", ('probe',)),
    ('layer (SecureLink)', ('SecureLink',)),
    ('handshake, token, transcript', ('DeviceHandshake', 'HandshakeTranscript', 'TokenV2',
     'SessionKeys', 'InitMessage', 'ResponseMessage', 'ConfirmMessage', 'SealedAnswer',
     'RefuseClear', 'ResetMessage', 'HandshakeRequest', 'HandshakeError', 'derive(',
     'sealOnce', 'openOnce', 'put(', 'putBigEndian', 'bigEndian(', 'SessionCrypto')),
    ('sealed data, window, limits', ('SealedData', 'ReplayWindow', 'KeyUsage', 'KeyLimits',
     'DatagramCipher')),
]

def split(variant):
    sums = {name: 0 for name, _ in areas}
    rest = 0
    for s, n in functions(variant):
        for name, marks in areas:
            if any(m in n for m in marks):
                sums[name] += s
                break
        else:
            rest += s
    return sums, rest

v1, v2 = text('v1'), text('v2')
print(f'v2-device-size: version 1 {v1} bytes, version 2 {v2} bytes of text: '
      f'version 2 costs {v2 - v1} bytes')
s1, r1 = split('v1')
s2, r2 = split('v2')
for name, _ in areas:
    print(f'  {name:40} {s2[name] - s1[name]:7}')
f1 = sum(s for s, _ in functions('v1'))
f2 = sum(s for s, _ in functions('v2'))
print(f'  {"the rest (stdlib, outlined, sessions)":40} {r2 - r1:7}')
print(f'  {"constants and other sections":40} {(v2 - f2) - (v1 - f1):7}')
if top:
    print(f'the {top} largest functions of version 2:')
    for s, n in sorted(functions('v2'))[-top:]:
        print(f'  {s:6} {n[:150]}')
PY

