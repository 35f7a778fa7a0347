// SPDX-License-Identifier: Apache-2.0
/// The ``FaultProxy`` where links are only cut and healed (`tether-demo`, the channel and
/// login end-to-end tests): a link is up, cut both ways, or cut from the device only.
/// One implementation, so a relay and a fault run forward, stamp and lock alike.
public typealias Relay = FaultProxy

extension FaultProxy {
  /// Relays `devices` devices to the edge at 127.0.0.1:`edgePort`, every link up.
  public convenience init(devices: Int, edgePort: UInt16) throws {
    try self.init(devices: devices, edgePort: edgePort, seed: 0)
  }

  /// Nothing passes device `i`'s link, either way, until ``heal(_:)``.
  public func cut(_ device: Int) { set(.blackholed, device: device) }

  /// Drops what device `i` sends; what the edge sends still reaches it.
  public func cutUplink(_ device: Int) { set(.blackholed, .uplink, device: device) }
}
