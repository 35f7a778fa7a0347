// SPDX-License-Identifier: Apache-2.0
import TetherCore

// fuzz-decode: any bytes into Packet.decode. It must never trap; what decodes must be
// exactly one encoding (encode(decode(x)) == x) and fit a datagram (docs/PROTOCOL.md §7).

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecode(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
  // A slice that does not start at index 0, as a receive buffer's would.
  let framed = [0xEE] + bytes
  let result = decode(framed[1...])
  require(decode(bytes[...]) == result, "decoding depends on where the slice starts")
  switch result {
  case .success(let packet):
    require(bytes.count <= Packet.maximumSize, "decoded \(bytes.count) bytes, over the maximum")
    require(packet.encoded == bytes, "decode then encode changed the bytes: \(packet)")
    for cut in [0, 1, bytes.count / 2, bytes.count - 1] where cut < bytes.count {
      var prefix = bytes
      prefix.removeLast(bytes.count - cut)
      let error = decode(prefix[...])
      require(
        error == .failure(.truncated),
        "a strict prefix of a valid datagram is not truncated: \(error)")
    }
  case .failure(let error):
    if bytes.count > Packet.maximumSize {
      require(error == .oversized, "an oversized datagram reported \(error)")
    }
  }
  return 0
}

private func decode(_ bytes: ArraySlice<UInt8>) -> Result<Packet, WireError> {
  do throws(WireError) {
    return .success(try Packet.decode(bytes))
  } catch {
    return .failure(error)
  }
}

@_cdecl("LLVMFuzzerInitialize")
public func initializeDecode(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer)
  -> CInt
{
  writeSeedsIfAsked {
    Samples.packets(cookie: 0x8F3A_51C2_07D4_E96B).map { ($0.name, $0.packet.encoded) }
  }
  return 0
}
