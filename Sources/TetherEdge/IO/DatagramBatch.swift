// SPDX-License-Identifier: Apache-2.0
import CTetherSystem
import Glibc

/// Up to ``capacity`` datagrams read with one `recvmmsg`, and the answers to them sent with
/// one `sendmmsg`: two system calls for a batch instead of two per datagram, which is most
/// of what a datagram costs the edge on loopback (docs/BENCHMARKS.md, edge capacity). The
/// storage is the batch's own, reused for every call; nothing is allocated per datagram.
final class DatagramBatch {
  /// Datagrams per call.
  static let capacity = 32
  /// Room for one received datagram. Nothing the edge takes is longer (an INIT is 469
  /// bytes, an admin request less); a longer one is cut to this and then read as malformed.
  static let slot = 2048
  /// Room for one datagram's control messages (`SO_RXQ_OVFL`: one 32-bit count).
  static let controlSlot = 64

  /// The received datagrams' bytes, `slot` apart.
  private var received = [UInt8](repeating: 0, count: capacity * slot)
  private var lengths = [Int](repeating: 0, count: capacity)
  private var peers = [PeerAddress](repeating: PeerAddress(), count: capacity)
  private var controls = [UInt8](repeating: 0, count: capacity * controlSlot)
  private var names = [sockaddr_storage](repeating: sockaddr_storage(), count: capacity)
  private var vectors = [iovec](repeating: iovec(), count: capacity)
  private var headers = [mmsghdr](repeating: mmsghdr(), count: capacity)
  /// The answers waiting for ``send(on:)``: their bytes one after another, and where each
  /// ends and goes.
  private var outgoing: [UInt8] = []
  private var outgoingEnds: [Int] = []
  private var outgoingPeers: [PeerAddress] = []

  /// The kernel's count of datagrams it dropped on the socket for want of room, as the
  /// last datagram read said (`SO_RXQ_OVFL`; 0 until one says). The kernel writes its
  /// running count into each datagram as it queues it, so drops show with the first
  /// datagram that arrives after them.
  private(set) var kernelDrops: UInt32 = 0

  /// Reads up to ``capacity`` datagrams from `descriptor` without waiting. Returns how
  /// many (0: none queued, or an error other than EINTR: the caller's next poll tells).
  func receive(from descriptor: Int32) -> Int {
    let count = received.withUnsafeMutableBytes { data in
      controls.withUnsafeMutableBytes { control in
        names.withUnsafeMutableBufferPointer { names in
          vectors.withUnsafeMutableBufferPointer { vectors in
            headers.withUnsafeMutableBufferPointer { headers in
              for index in 0..<Self.capacity {
                vectors[index] = iovec(
                  iov_base: data.baseAddress.map { $0 + index * Self.slot }, iov_len: Self.slot)
                var header = msghdr()
                header.msg_name = UnsafeMutableRawPointer(names.baseAddress.map { $0 + index })
                header.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                header.msg_iov = vectors.baseAddress.map { $0 + index }
                header.msg_iovlen = 1
                header.msg_control = control.baseAddress.map { $0 + index * Self.controlSlot }
                header.msg_controllen = Self.controlSlot
                headers[index] = mmsghdr(msg_hdr: header, msg_len: 0)
              }
              while true {
                let got = recvmmsg(
                  descriptor, headers.baseAddress, UInt32(Self.capacity), Int32(MSG_DONTWAIT),
                  nil)
                if got >= 0 || errno != EINTR { return Int(max(got, 0)) }
              }
            }
          }
        }
      }
    }
    for index in 0..<count {
      let header = headers[index].msg_hdr
      lengths[index] = min(Int(headers[index].msg_len), Self.slot)
      peers[index] = UnconnectedUDPSocket.peer(names[index], length: header.msg_namelen)
      if let drops = Self.overflowCount(controls, at: index * Self.controlSlot, header) {
        kernelDrops = drops
      }
    }
    return count
  }

  /// Datagram `index` of the last ``receive(from:)``: its bytes and who sent it.
  func datagram(_ index: Int) -> (bytes: ArraySlice<UInt8>, from: PeerAddress) {
    let start = index * Self.slot
    return (received[start..<(start + lengths[index])], peers[index])
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
      let sent = sendChunk(on: descriptor, from: first, count: count)
      failed += count - sent
      first += count
    }
    outgoing.removeAll(keepingCapacity: true)
    outgoingEnds.removeAll(keepingCapacity: true)
    outgoingPeers.removeAll(keepingCapacity: true)
    return failed
  }

  /// One `sendmmsg` of queued datagrams `first ..< first + count`; after a datagram the
  /// system refused, the rest are tried one call each (sendmmsg stops at the first error).
  /// Returns how many were sent.
  private func sendChunk(on descriptor: Int32, from first: Int, count: Int) -> Int {
    for index in 0..<count {
      let peer = outgoingPeers[first + index]
      names[index] = sockaddr_storage()
      peer.withUnsafeBytes { source in
        withUnsafeMutableBytes(of: &names[index]) { target in
          target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source.prefix(target.count)))
        }
      }
    }
    return outgoing.withUnsafeMutableBytes { data in
      names.withUnsafeMutableBufferPointer { names in
        vectors.withUnsafeMutableBufferPointer { vectors in
          headers.withUnsafeMutableBufferPointer { headers in
            for index in 0..<count {
              let datagram = first + index
              let start = datagram == 0 ? 0 : outgoingEnds[datagram - 1]
              vectors[index] = iovec(
                iov_base: data.baseAddress.map { $0 + start },
                iov_len: outgoingEnds[datagram] - start)
              var header = msghdr()
              header.msg_name = UnsafeMutableRawPointer(names.baseAddress.map { $0 + index })
              header.msg_namelen = socklen_t(outgoingPeers[datagram].count)
              header.msg_iov = vectors.baseAddress.map { $0 + index }
              header.msg_iovlen = 1
              headers[index] = mmsghdr(msg_hdr: header, msg_len: 0)
            }
            var sent = 0
            while sent < count {
              let taken = sendmmsg(
                descriptor, headers.baseAddress.map { $0 + sent }, UInt32(count - sent),
                Int32(Glibc.MSG_NOSIGNAL))
              if taken > 0 {
                sent += Int(taken)
              } else if errno != EINTR {
                // This one is refused (lost): go on past it.
                return sent + Self.sendEach(descriptor, headers, from: sent + 1, to: count)
              }
            }
            return sent
          }
        }
      }
    }
  }

  /// The datagrams `from ..< to` of `headers`, one `sendmsg` each. Returns how many went.
  private static func sendEach(
    _ descriptor: Int32, _ headers: UnsafeMutableBufferPointer<mmsghdr>, from: Int, to: Int
  ) -> Int {
    var sent = 0
    for index in from..<max(from, to) {
      var header = headers[index].msg_hdr
      if sendmsg(descriptor, &header, Int32(Glibc.MSG_NOSIGNAL)) >= 0 { sent += 1 }
    }
    return sent
  }

  /// The `SO_RXQ_OVFL` count in one datagram's control messages (at `offset` of
  /// `controls`, as `header` left them), or nil if it holds none. (The `CMSG_*` macros
  /// are not visible from Swift: the headers are walked by their lengths.)
  private static func overflowCount(_ controls: [UInt8], at offset: Int, _ header: msghdr)
    -> UInt32?
  {
    let headerSize = MemoryLayout<cmsghdr>.size
    let align = MemoryLayout<Int>.size
    let end = offset + min(Int(header.msg_controllen), controlSlot)
    var position = offset
    return controls.withUnsafeBytes { raw -> UInt32? in
      while position + headerSize <= end {
        let message = raw.loadUnaligned(fromByteOffset: position, as: cmsghdr.self)
        let length = Int(message.cmsg_len)
        guard length >= headerSize, position + length <= end else { return nil }
        let dataOffset = position + (headerSize + align - 1) / align * align
        if message.cmsg_level == SOL_SOCKET, message.cmsg_type == SO_RXQ_OVFL,
          dataOffset + 4 <= end
        {
          return raw.loadUnaligned(fromByteOffset: dataOffset, as: UInt32.self)
        }
        position += (length + align - 1) / align * align
      }
      return nil
    }
  }
}
