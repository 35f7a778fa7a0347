// SPDX-License-Identifier: Apache-2.0
#if TETHER_TEST_CRYPTO
  internal import CSodium

  /// The random stream of the `TETHER_TEST_CRYPTO` build of the device library (never
  /// shipped: `make abi-check` refuses a library that exports `tether_test_random_seed`
  /// or references `randombytes_buf_deterministic`). Once a test has set a seed
  /// (`tether_test_random_seed`), every draw of ``SodiumCrypto/randomBytes(count:)`` takes
  /// the next bytes of `randombytes_buf_deterministic(size, seed)`, in order from its
  /// start, draw after draw: the stream scripts/test/v2-vectors.py's `SeededStream` makes
  /// with PyNaCl, so x86_64, aarch64 and armv7 reproduce the vectors' bytes.
  ///
  /// The stream is ChaCha20's keystream, so the first `n` bytes of a longer output are the
  /// output for `n`: a draw of `count` bytes at `position` is the tail of the output for
  /// `position + count`. That costs a test a few microseconds per draw; the shipped build
  /// has none of it.
  enum SeededStream {
    /// The seed and how many bytes have been drawn; a test's process has one thread.
    nonisolated(unsafe) private static var seed: [UInt8] = []
    nonisolated(unsafe) private static var position = 0

    /// Starts the stream of `seed` (32 bytes) from its first byte.
    static func start(seed newSeed: UnsafePointer<UInt8>) {
      seed = [UInt8](UnsafeBufferPointer(start: newSeed, count: Int(randombytes_SEEDBYTES)))
      position = 0
    }

    /// Fills `buffer` with the stream's next bytes; false (nothing drawn) before a seed.
    static func draw(into buffer: UnsafeMutableRawBufferPointer) -> Bool {
      guard !seed.isEmpty, let destination = buffer.baseAddress else { return false }
      var stream = [UInt8](repeating: 0, count: position + buffer.count)
      stream.withUnsafeMutableBytes { stream in
        guard let base = stream.baseAddress else { return }
        randombytes_buf_deterministic(base, stream.count, seed)
        destination.copyMemory(from: base + position, byteCount: buffer.count)
      }
      position += buffer.count
      return true
    }
  }
#endif
