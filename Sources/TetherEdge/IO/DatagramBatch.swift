// SPDX-License-Identifier: Apache-2.0
import CEdgeIO
import Glibc

/// Up to ``capacity`` datagrams read with one `recvmmsg`, and the answers to them sent with
/// one `sendmmsg` (Sources/CEdgeIO): two system calls for a batch instead of two per
/// datagram, a good part of what a datagram costs the edge on loopback (docs/BENCHMARKS.md,
/// edge capacity). The storage is the batch's own, reused for every call; nothing is
/// allocated per datagram once the answers' queue has grown to its size.
final class DatagramBatch {
  /// Datagrams per call.
  static let capacity = Int(TETHER_EDGE_IO_BATCH)
  /// Room for one received datagram. Nothing the edge takes is longer (an INIT is 469
  /// bytes, an admin request less); a longer one is cut to this and then read as malformed.
  static let slot = 2048

  /// The received datagrams' bytes, `slot` apart, and their lengths and senders.
  private var received = [UInt8](repeating: 0, count: capacity * slot)
  private var lengths = [Int](repeating: 0, count: capacity)
  private var names = [sockaddr_storage](repeating: sockaddr_storage(), count: capacity)
  private var nameLengths = [socklen_t](repeating: 0, count: capacity)
  /// The answers waiting for ``send(on:)``: their bytes one after another, where each ends,
  /// and where each goes.
  private var outgoing: [UInt8] = []
  private var outgoingEnds: [Int] = []
  private var outgoingPeers: [PeerAddress] = []
  /// One chunk's ends, counted from the chunk's first byte (reused: no array per send).
  private var chunkEnds = [Int](repeating: 0, count: capacity)

  /// The kernel's count of datagrams it dropped on the socket for want of room, as the
  /// last datagram read said (`SO_RXQ_OVFL`; 0 until one says). The kernel writes its
  /// running count into each datagram as it queues it, so drops show with the first
  /// datagram that arrives after them.
  private(set) var kernelDrops: UInt32 = 0

  /// Reads up to ``capacity`` datagrams from `descriptor` without waiting. Returns how
  /// many (0: none queued, or an error: the caller's next poll tells).
  func receive(from descriptor: Int32) -> Int {
    var drops = kernelDrops
    let count = received.withUnsafeMutableBufferPointer { bytes in
      lengths.withUnsafeMutableBufferPointer { lengths in
        names.withUnsafeMutableBufferPointer { names in
          nameLengths.withUnsafeMutableBufferPointer { nameLengths in
            Int(
              tether_edge_receive(
                descriptor, bytes.baseAddress, Self.slot, lengths.baseAddress, names.baseAddress,
                nameLengths.baseAddress, &drops, Int32(Self.capacity)))
          }
        }
      }
    }
    kernelDrops = drops
    return count
  }

  /// Datagram `index` of the last ``receive(from:)``: its bytes and who sent it.
  func datagram(_ index: Int) -> (bytes: ArraySlice<UInt8>, from: PeerAddress) {
    let start = index * Self.slot
    let peer = UnconnectedUDPSocket.peer(names[index], length: nameLengths[index])
    return (received[start..<(start + lengths[index])], peer)
  }

  /// Keeps `bytes` to send to `peer` with the next ``send(on:)``.
  func queue(_ bytes: [UInt8], to peer: PeerAddress) {
    outgoing += bytes
    outgoingEnds.append(outgoing.count)
    outgoingPeers.append(peer)
  }

  /// Sends what was queued, ``capacity`` at a time, and empties the queue. Returns how
  /// many the system did not take (lost, as UDP datagrams may be).
  func send(on descriptor: Int32) -> Int {
    var failed = 0
    var first = 0
    while first < outgoingEnds.count {
      let count = min(Self.capacity, outgoingEnds.count - first)
      for index in 0..<count {
        let peer = outgoingPeers[first + index]
        names[index] = sockaddr_storage()
        peer.withUnsafeBytes { source in
          withUnsafeMutableBytes(of: &names[index]) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(target.count)))
          }
        }
        nameLengths[index] = socklen_t(peer.count)
      }
      // The chunk's ends, counted from its first byte.
      let base = first == 0 ? 0 : outgoingEnds[first - 1]
      for index in 0..<count { chunkEnds[index] = outgoingEnds[first + index] - base }
      let sent = outgoing.withUnsafeBufferPointer { data in
        chunkEnds.withUnsafeBufferPointer { ends in
          names.withUnsafeBufferPointer { names in
            nameLengths.withUnsafeBufferPointer { nameLengths in
              Int(
                tether_edge_send(
                  descriptor, data.baseAddress.map { $0 + base }, ends.baseAddress,
                  names.baseAddress, nameLengths.baseAddress, Int32(count)))
            }
          }
        }
      }
      failed += count - sent
      first += count
    }
    outgoing.removeAll(keepingCapacity: true)
    outgoingEnds.removeAll(keepingCapacity: true)
    outgoingPeers.removeAll(keepingCapacity: true)
    return failed
  }
}
