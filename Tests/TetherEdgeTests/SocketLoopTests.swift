// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
import TetherCore
import TetherSim

@testable import TetherEdge

/// The real UDP loop on loopback: started in-process on a thread, spoken to from a test
/// socket, stopped through its stop signal.
struct SocketLoopTests {
  /// A loop running on its own thread, bound to 127.0.0.1 (or ::1) with port 0.
  final class Running: Sendable {
    let stop: StopSignal
    let address = Mutex<SocketAddress?>(nil)
    let finished = DispatchSemaphore(value: 0)

    init(listen: String) throws {
      stop = try StopSignal()
      let listen = try SocketAddress(parsing: listen)
      let config = World.config()
      Thread.detachNewThread { [self] in
        defer { finished.signal() }
        guard
          let loop = try? EdgeLoop(server: EdgeServer(config: config), listen: listen, stop: stop)
        else { return }
        address.withLock { $0 = loop.localAddress }
        try? loop.run()
      }
    }

    /// Waits (up to 2 s) for the loop to be bound.
    func bound() throws -> SocketAddress {
      for _ in 0..<200 {
        if let bound = address.withLock({ $0 }) { return bound }
        usleep(10_000)
      }
      throw SystemError("bind", errno: ETIMEDOUT)
    }

    /// Stops the loop; true if its thread returned within 2 s.
    func shutDown() -> Bool {
      stop.request()
      return finished.wait(timeout: .now() + 2) == .success
    }
  }

  /// A version 2 device on one UDP socket (the ticket is bound to its address: INIT and
  /// CONFIRM must come from the same port).
  struct Device {
    let socket: UnconnectedUDPSocket
    let server: SocketAddress
    var device: SecureDevice

    init(uid: UInt32, server: SocketAddress) throws {
      socket = try UnconnectedUDPSocket(family: server.family)
      self.server = server
      let minter = try TokenMinter(certificate: World.certificate)
      let token = minter.mint(
        appID: Fixture.appID, grant: .channel(Fixture.channel, uid: uid),
        expiresAt: UInt64(time(nil)) + 600)
      device = SecureDevice(token: token, address: server.peer)
    }

    /// Sends `bytes` and waits up to 1 s for one datagram back from the server.
    func exchange(_ bytes: [UInt8]) -> [UInt8]? {
      #expect(socket.send(bytes, to: server.peer))
      var fds = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
      guard poll(&fds, 1, 1000) == 1 else { return nil }
      var buffer = [UInt8](repeating: 0, count: 2048)
      guard
        case .datagram(let count, let from) = buffer.withUnsafeMutableBytes({
          socket.receive(into: $0)
        }),
        from == server.peer
      else { return nil }
      return Array(buffer.prefix(count))
    }

    /// INIT, RESPONSE, CONFIRM; the edge's first answer to the CONFIRM, opened.
    mutating func join(uid: UInt32) throws -> EdgePayloadView? {
      let request = SecureBench.channelRequest(uid: uid)
      let response = try #require(exchange(device.initiate(request)))
      guard case .established? = try? device.take(response) else { return nil }
      let answer = try #require(exchange(device.confirm!.bytes))
      return device.open(answer).map(EdgePayloadView.init)
    }
  }

  @Test func loop_onLoopbackPortZero_acceptsAJoin_answersAKick_andStops() throws {
    let running = try Running(listen: "127.0.0.1:0")
    let server = try running.bound()
    #expect(server.port != 0)
    #expect(server.description == "127.0.0.1:\(server.port)")
    var device = try Device(uid: 77, server: server)
    let answer = try #require(try device.join(uid: 77))
    guard case .accept(let accept)? = answer.message else {
      Issue.record("expected ACCEPT, got \(answer.bytes)")
      return
    }
    #expect(accept.uid == 77)
    #expect(accept.tokenTimeLeftMs > 590_000)
    let kick = AdminKick(
      channel: Fixture.channel, uid: 77, banSeconds: 0, unixTime: UInt64(time(nil)), nonce: 5
    ).sealed(appID: Fixture.appID, certificate: World.certificate)
    #expect(try AdminClient.send(kick, to: server, timeoutMs: 1000) == .kicked)
    #expect(running.shutDown())
  }

  @Test func loop_onIPv6Loopback_acceptsAJoin() throws {
    let running = try Running(listen: "[::1]:0")
    let server = try running.bound()
    #expect(server.description == "[::1]:\(server.port)")
    var device = try Device(uid: 78, server: server)
    #expect(try device.join(uid: 78)?.type == 0x81)
    #expect(running.shutDown())
  }

  @Test func loop_idleWithNoSession_stopsAtOnce() throws {
    let running = try Running(listen: "127.0.0.1:0")
    _ = try running.bound()
    #expect(running.shutDown())
  }

  @Test func bind_toAnAddressInUse_fails() throws {
    let first = try UnconnectedUDPSocket(bindingTo: try SocketAddress(parsing: "127.0.0.1:0"))
    let taken = try first.localAddress()
    #expect(throws: SystemError.self) { try UnconnectedUDPSocket(bindingTo: taken) }
  }
}

/// `HOST:PORT` parsing: numeric IPv4 and bracketed IPv6 only.
struct SocketAddressTests {
  @Test(arguments: ["127.0.0.1:7000", "0.0.0.0:0", "[::1]:7000", "[::]:0", "[fe80::1:2]:65535"])
  func parse_roundTrips(_ text: String) throws {
    #expect(try SocketAddress(parsing: text).description == text)
  }

  @Test func parse_readsFamilyAndPort() throws {
    let v4 = try SocketAddress(parsing: "10.1.2.3:443")
    #expect(v4.family == AF_INET)
    #expect(v4.port == 443)
    let v6 = try SocketAddress(parsing: "[::1]:8")
    #expect(v6.family == AF_INET6)
    #expect(v6.port == 8)
  }

  @Test(arguments: [
    ("", SocketAddress.ParseError.missingPort), ("127.0.0.1", .missingPort),
    ("[::1]", .missingPort),
    ("[::1", .missingPort), ("127.0.0.1:", .invalidPort), ("127.0.0.1:65536", .invalidPort),
    ("127.0.0.1:-1", .invalidPort), ("127.0.0.1:80a", .invalidPort), ("localhost:80", .invalidHost),
    ("::1:80", .invalidHost), ("1.2.3:80", .invalidHost), ("[127.0.0.1]:80", .invalidHost),
    ("1.2.3.4.5:80", .invalidHost),
  ])
  func parse_refuses(_ text: String, _ error: SocketAddress.ParseError) {
    #expect(throws: error) { try SocketAddress(parsing: text) }
  }
}
