// SPDX-License-Identifier: Apache-2.0
import Glibc
import Testing

@testable import TetherEdge

/// The edge's socket I/O a batch at a time (``DatagramBatch``), on loopback: many datagrams
/// read with one call, each with its sender; the answers sent with one call, each to its
/// peer; the kernel's drops counted; the receive buffer raised.
struct DatagramBatchTests {
  /// A socket bound to 127.0.0.1 with a port of its own, and its address.
  static func bound() throws -> (UnconnectedUDPSocket, SocketAddress) {
    let socket = try UnconnectedUDPSocket(bindingTo: SocketAddress(parsing: "127.0.0.1:0"))
    return (socket, try socket.localAddress())
  }

  /// Sends `bytes` from `socket` to `address` (one datagram).
  static func send(_ bytes: [UInt8], from socket: UnconnectedUDPSocket, to address: SocketAddress) {
    #expect(socket.send(bytes, to: address.peer))
  }

  /// Every datagram queued on `socket` now, read a batch at a time, with its sender.
  static func readAll(_ batch: DatagramBatch, _ socket: UnconnectedUDPSocket)
    -> [([UInt8], PeerAddress)]
  {
    var all: [([UInt8], PeerAddress)] = []
    while true {
      let count = batch.receive(from: socket.descriptor)
      for index in 0..<count {
        let (bytes, peer) = batch.datagram(index)
        all.append((Array(bytes), peer))
      }
      if count < DatagramBatch.capacity { return all }
    }
  }

  @Test func receive_takesEveryQueuedDatagram_inOrder_withItsSender() throws {
    let (edge, edgeAddress) = try Self.bound()
    let (first, firstAddress) = try Self.bound()
    let (second, secondAddress) = try Self.bound()
    // 70: more than two batches' worth.
    for index in 0..<35 {
      Self.send([1, UInt8(index)], from: first, to: edgeAddress)
      Self.send([2, UInt8(index), 9], from: second, to: edgeAddress)
    }
    let got = Self.readAll(DatagramBatch(), edge)
    #expect(got.count == 70)
    #expect(got.filter { $0.1 == firstAddress.peer }.map(\.0) == (0..<35).map { [1, UInt8($0)] })
    #expect(
      got.filter { $0.1 == secondAddress.peer }.map(\.0) == (0..<35).map { [2, UInt8($0), 9] })
  }

  @Test func receive_cutsADatagramLongerThanASlot() throws {
    let (edge, edgeAddress) = try Self.bound()
    let (sender, _) = try Self.bound()
    Self.send([UInt8](repeating: 7, count: DatagramBatch.slot + 100), from: sender, to: edgeAddress)
    let got = Self.readAll(DatagramBatch(), edge)
    #expect(got.map(\.0.count) == [DatagramBatch.slot])
  }

  @Test func send_deliversEveryQueuedDatagram_toItsPeer_inOrder() throws {
    let (edge, _) = try Self.bound()
    let (first, firstAddress) = try Self.bound()
    let (second, secondAddress) = try Self.bound()
    let batch = DatagramBatch()
    for index in 0..<40 {  // more than one sendmmsg's worth
      batch.queue([UInt8(index)], to: index % 2 == 0 ? firstAddress.peer : secondAddress.peer)
    }
    #expect(batch.send(on: edge.descriptor) == 0)
    let reader = DatagramBatch()
    #expect(
      Self.readAll(reader, first).map(\.0) == stride(from: 0, to: 40, by: 2).map { [UInt8($0)] })
    #expect(
      Self.readAll(reader, second).map(\.0) == stride(from: 1, to: 40, by: 2).map { [UInt8($0)] })
    // The queue is empty afterwards: a second send sends nothing.
    #expect(batch.send(on: edge.descriptor) == 0)
    #expect(Self.readAll(reader, first).isEmpty)
  }

  /// With its receive buffer made tiny, the socket overflows; the kernel's count of what it
  /// dropped comes with the next datagram read, and is what was sent but not read.
  @Test func receive_countsWhatTheKernelDropped() throws {
    let (edge, edgeAddress) = try Self.bound()
    let (sender, _) = try Self.bound()
    #expect(edge.raiseReceiveBuffer() != nil)  // SO_RXQ_OVFL on
    var tiny: Int32 = 1
    #expect(
      setsockopt(edge.descriptor, SOL_SOCKET, SO_RCVBUF, &tiny, socklen_t(MemoryLayout<Int32>.size))
        == 0)
    for index in 0..<200 { Self.send([UInt8(index % 256)], from: sender, to: edgeAddress) }
    let batch = DatagramBatch()
    let read = Self.readAll(batch, edge).count
    #expect(read > 0 && read < 200)
    // The kernel writes its running count into each datagram as it queues it: the ones read
    // were queued before the drops. The next one to arrive carries them.
    Self.send([1], from: sender, to: edgeAddress)
    #expect(Self.readAll(batch, edge).count == 1)
    #expect(Int(batch.kernelDrops) == 200 - read)
  }

  @Test func raiseReceiveBuffer_reachesTheSystemsMaximum() throws {
    let (edge, _) = try Self.bound()
    let size = try #require(edge.raiseReceiveBuffer())
    let maximum = try #require(UnconnectedUDPSocket.systemReceiveMaximum())
    #expect(size >= maximum)  // the kernel doubles what it is asked for
  }
}
