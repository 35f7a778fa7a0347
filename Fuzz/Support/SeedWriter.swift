// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
  import Glibc
#endif

/// `TETHER_FUZZ_WRITE_SEEDS=DIR fuzz-x`: writes the target's seed inputs into DIR and exits,
/// instead of fuzzing. The seeds are built from packets the real encoders produce
/// (scripts/test/fuzz.sh seeds).
func writeSeedsIfAsked(_ seeds: () -> [(name: String, bytes: [UInt8])]) {
  guard let directory = getenv("TETHER_FUZZ_WRITE_SEEDS") else { return }
  let path = String(cString: directory)
  for seed in seeds() {
    guard let file = fopen(path + "/" + seed.name, "wb") else {
      fatalError("cannot write \(path)/\(seed.name)")
    }
    _ = seed.bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    fclose(file)
  }
  exit(0)
}
