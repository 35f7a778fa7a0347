import CLibev

#if canImport(Glibc)
  import Glibc
#endif

/// Watches the device's IP addresses with a netlink route socket on the loop and tells the
/// engine when one is added or removed (RTM_NEWADDR / RTM_DELADDR). Linux only; where the
/// socket cannot be opened the engine runs without it (the app can still report changes).
struct NetlinkWatcher {
  let fd: Int32
  let io: UnsafeMutablePointer<ev_io>

  // linux/netlink.h and linux/rtnetlink.h values, which Glibc does not import.
  static let netlinkRoute: Int32 = 0
  static let groups: UInt32 = 0x10 | 0x100  // RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR
  static let newAddress: UInt16 = 20  // RTM_NEWADDR
  static let deleteAddress: UInt16 = 21  // RTM_DELADDR

  init?(loop: OpaquePointer, handle: UnsafeMutableRawPointer) {
    let flags =
      Int32(SOCK_RAW.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    let fd = socket(AF_NETLINK, flags, Self.netlinkRoute)
    guard fd >= 0 else { return nil }
    // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; u32 nl_pid; u32 nl_groups; }
    var address: (UInt16, UInt16, UInt32, UInt32) = (UInt16(AF_NETLINK), 0, 0, Self.groups)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, 12) }
    }
    guard bound == 0 else {
      System.closeDescriptor(fd)
      return nil
    }
    self.fd = fd
    io = .allocate(capacity: 1)
    io.initialize(to: ev_io())
    tether_ev_io_init(io, netlinkReadable, fd, Int32(EV_READ))
    tether_ev_set_data_io(io, handle)
    ev_io_start(loop, io)
  }

  func stop(loop: OpaquePointer) {
    ev_io_stop(loop, io)
    System.closeDescriptor(fd)
    io.deinitialize(count: 1)
    io.deallocate()
  }

  /// Reads what is waiting; true if any message said an address was added or removed.
  static func drain(_ fd: Int32) -> Bool {
    var changed = false
    var buffer = [UInt8](repeating: 0, count: 8192)
    for _ in 0..<16 {
      let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
      guard n > 0 else { break }
      var offset = 0
      // struct nlmsghdr { u32 len; u16 type; u16 flags; u32 seq; u32 pid; }, 4-byte aligned.
      while offset + 16 <= n {
        let length = buffer.withUnsafeBytes {
          Int($0.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        }
        let type = buffer.withUnsafeBytes {
          $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self)
        }
        if type == newAddress || type == deleteAddress { changed = true }
        guard length >= 16 else { break }
        offset += (length + 3) & ~3
      }
    }
    return changed
  }
}

private func netlinkReadable(
  _ loop: OpaquePointer?, _ io: UnsafeMutablePointer<ev_io>?, _ events: Int32
) {
  guard let io, let handle = engineHandle(tether_ev_data_io(io)) else { return }
  let engine = handle.takeUnretainedValue()
  guard let fd = engine.netlink?.fd, NetlinkWatcher.drain(fd) else { return }
  engine.addressesChanged()
  settle(handle)
}
