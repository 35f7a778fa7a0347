// SPDX-License-Identifier: Apache-2.0

/// One run of one edge: its `--edge-id` and a random incarnation drawn at start, so a
/// restarted edge is not taken for its old self (whose records it then reaps).
struct FleetOwner: Hashable {
  var edgeID: [UInt8]
  var incarnation: UInt64

  /// Orders owners for the one rule that settles a conflict no revision settles: by edge id
  /// bytes, then incarnation.
  static func precedes(_ a: FleetOwner, _ b: FleetOwner) -> Bool {
    a.edgeID.lexicographicallyPrecedes(b.edgeID)
      || (a.edgeID == b.edgeID && a.incarnation < b.incarnation)
  }
}

/// The value of one record in the fleet's bucket: who holds the identity or membership, since
/// when (unix milliseconds, the holder's clock), and whether it is still joined. A record
/// left in state `left` says its member quit (members elsewhere get LEFT or a *left* event);
/// a member that ended silently (forgotten, or taken over) has its record deleted instead.
///
/// Text, one line, so an operator can read it with `nats kv get`:
/// `tether-fleet 1 edge=<id> inc=<16 hex> at=<ms> state=joined|left`.
struct FleetRecord: Equatable {
  enum State: String { case joined, left }

  var owner: FleetOwner
  var joinedAtMs: UInt64
  var state: State

  var bytes: [UInt8] {
    Array(
      "tether-fleet 1 \(FleetText.fields(of: owner)) at=\(joinedAtMs) state=\(state.rawValue)".utf8)
  }

  /// The record `bytes` hold, or nil (another format, or damaged).
  init?(_ bytes: [UInt8]) {
    guard let fields = FleetText.fields(bytes, magic: "tether-fleet"),
      let owner = FleetText.owner(fields),
      let at = fields["at"].flatMap(FleetText.parseDecimal),
      let state = fields["state"].flatMap({ State(rawValue: String(decoding: $0, as: UTF8.self)) })
    else { return nil }
    self.init(owner: owner, joinedAtMs: at, state: state)
  }

  init(owner: FleetOwner, joinedAtMs: UInt64, state: State) {
    self.owner = owner
    self.joinedAtMs = joinedAtMs
    self.state = state
  }

  /// Whether a join recorded as `self` is later than one recorded as `other`: the rule for a
  /// conflict born where neither side wrote on the other's revision (a partition). The
  /// edges' clocks decide; a tie goes to the greater owner.
  func isLater(than other: FleetRecord) -> Bool {
    if joinedAtMs != other.joinedAtMs { return joinedAtMs > other.joinedAtMs }
    return FleetOwner.precedes(other.owner, owner)
  }
}

/// An edge's beacon, published every presence interval on `beacon`: it is alive, and how
/// long each of its channel members silent longer than a heartbeat and a half has been
/// silent (the others are taken as just heard). A remote member's age is the age of its
/// edge's last beacon plus what that beacon listed.
///
/// `tether-beacon 1 edge=<id> inc=<16 hex> silent=<key>:<ms>,...` (at most
/// ``maximumListed`` members, the longest silent first: those are the nearest to DROPPED).
struct FleetBeacon: Equatable {
  var owner: FleetOwner
  var silences: [String: UInt64]

  static let subject = "beacon"
  static let maximumListed = 16_384

  var bytes: [UInt8] {
    let listed = silences.sorted {
      $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key)
    }
    .prefix(Self.maximumListed).map { "\($0.key):\($0.value)" }.joined(separator: ",")
    return Array(
      "tether-beacon 1 \(FleetText.fields(of: owner)) silent=\(listed)".utf8)
  }

  init(owner: FleetOwner, silences: [String: UInt64]) {
    self.owner = owner
    self.silences = silences
  }

  init?(_ bytes: [UInt8]) {
    guard let fields = FleetText.fields(bytes, magic: "tether-beacon"),
      let owner = FleetText.owner(fields), let listed = fields["silent"]
    else { return nil }
    var silences: [String: UInt64] = [:]
    for item in listed.split(separator: UInt8(ascii: ",")) {
      let parts = item.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
      guard parts.count == 2, let ms = FleetText.parseDecimal(parts[1]), !parts[0].isEmpty,
        silences.count < Self.maximumListed
      else { return nil }
      silences[String(decoding: parts[0], as: UTF8.self)] = ms
    }
    self.init(owner: owner, silences: silences)
  }
}

/// A kick or ban taken by one edge's admin interface, published on `admin` so that every
/// edge ends the session and keeps the ban: the request was checked (MAC, time, nonce) by
/// the edge that took it; the bus is the fleet's own (credentials, docs/FLEET.md).
///
/// `tether-admin 1 edge=<id> inc=<16 hex> channel=<encoded> uid=<n> until=<unix s>`, or
/// `user=<encoded>` in place of channel and uid; `until` 0: a kick without a ban.
struct FleetAdmin: Equatable {
  var origin: FleetOwner
  /// ``FleetKey/member(_:uid:)`` or ``FleetKey/user(_:)``.
  var target: FleetKey
  var bannedUntil: UInt64

  static let subject = "admin"

  var bytes: [UInt8] {
    var text =
      "tether-admin 1 \(FleetText.fields(of: origin)) "
    switch target {
    case .member(let channel, let uid):
      text += "channel=\(FleetName.encode(channel.bytes)) uid=\(uid) "
    case .user(let user):
      text += "user=\(FleetName.encode(user.bytes)) "
    case .loginMember: break  // never made (init)
    }
    return Array((text + "until=\(bannedUntil)").utf8)
  }

  /// Nil unless `target` is a channel member or a user id.
  init?(origin: FleetOwner, target: FleetKey, bannedUntil: UInt64) {
    if case .loginMember = target { return nil }
    self.origin = origin
    self.target = target
    self.bannedUntil = bannedUntil
  }

  init?(_ bytes: [UInt8]) {
    guard let fields = FleetText.fields(bytes, magic: "tether-admin"),
      let origin = FleetText.owner(fields),
      let until = fields["until"].flatMap(FleetText.parseDecimal)
    else { return nil }
    let target: FleetKey
    if let channel = fields["channel"], let uid = fields["uid"] {
      guard
        let key = FleetKey(
          "c.\(String(decoding: channel, as: UTF8.self)).\(String(decoding: uid, as: UTF8.self))")
      else { return nil }
      target = key
    } else if let user = fields["user"],
      let key = FleetKey("u.\(String(decoding: user, as: UTF8.self))")
    {
      target = key
    } else {
      return nil
    }
    self.init(origin: origin, target: target, bannedUntil: until)
  }
}

/// The one-line `magic 1 key=value ...` format of the fleet's records and messages.
enum FleetText {
  /// The fields after `magic 1`, or nil when the magic or version differ, a field repeats,
  /// or the line is longer than a beacon can be.
  static func fields(_ bytes: [UInt8], magic: String) -> [String: [UInt8]]? {
    guard bytes.count <= 1 << 20 else { return nil }
    let words = bytes.split(separator: UInt8(ascii: " "))
    guard words.count >= 2, words[0].elementsEqual(magic.utf8), words[1].elementsEqual("1".utf8)
    else { return nil }
    var fields: [String: [UInt8]] = [:]
    for word in words.dropFirst(2) {
      guard let equals = word.firstIndex(of: UInt8(ascii: "=")) else { return nil }
      let name = String(decoding: word[word.startIndex..<equals], as: UTF8.self)
      guard fields[name] == nil else { return nil }
      fields[name] = Array(word[word.index(after: equals)...])
    }
    return fields
  }

  /// `edge=<id> inc=<16 hex>`: the fields every record and message starts with.
  static func fields(of owner: FleetOwner) -> String {
    "edge=\(String(decoding: owner.edgeID, as: UTF8.self)) inc=\(hex(owner.incarnation))"
  }

  /// The `edge=` and `inc=` fields every record and message starts with.
  static func owner(_ fields: [String: [UInt8]]) -> FleetOwner? {
    guard let edge = fields["edge"], isEdgeID(edge),
      let incarnation = fields["inc"].flatMap(parseHex)
    else { return nil }
    return FleetOwner(edgeID: edge, incarnation: incarnation)
  }

  static func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }

  static func parseHex<Text: Collection<UInt8>>(_ text: Text) -> UInt64? {
    guard text.count == 16 else { return nil }
    var value: UInt64 = 0
    for byte in text {
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      default: return nil
      }
      value = value << 4 | UInt64(digit)
    }
    return value
  }

  /// A decimal UInt64 of at most 19 digits (no overflow), no sign.
  static func parseDecimal<Text: Collection<UInt8>>(_ text: Text) -> UInt64? {
    guard !text.isEmpty, text.count <= 19 else { return nil }
    var value: UInt64 = 0
    for byte in text {
      guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
      value = value * 10 + UInt64(byte - UInt8(ascii: "0"))
    }
    return value
  }

  /// An edge id's rule (``EdgeID``): 1 … 255 bytes of printable ASCII without space.
  static func isEdgeID(_ bytes: [UInt8]) -> Bool {
    (1...EdgeID.maximumLength).contains(bytes.count)
      && bytes.allSatisfy { (0x21...0x7E).contains($0) }
  }
}
