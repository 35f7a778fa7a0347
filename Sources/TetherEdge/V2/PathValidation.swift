// SPDX-License-Identifier: Apache-2.0
/// One version 2 session's roaming (docs/PROTOCOL.md §12.11, after RFC 9000 §9): the address
/// its device may have moved to, and the challenge that address must answer before the
/// session moves there. The session's own address stays where everything else is sent
/// until then.
///
/// Only datagrams that opened come here, so everything it hears is the device's (or a copy
/// of the device's, moved by someone on the path): the challenge, sealed under the session's
/// keys, is what only the device can answer, and only from where it receives.
struct PathValidation: Equatable {
  /// An address not validated that a datagram of the session came from.
  struct Candidate: Equatable {
    let address: PeerAddress
    /// The 8 random bytes of its PATH_CHALLENGE; its PATH_RESPONSE must echo them.
    let challenge: [UInt8]
    /// Bytes that opened from it, and bytes sent to it: at most as many out as in (§12.13).
    var budget = AmplificationBudget()
  }

  /// The length of a challenge (PATH_CHALLENGE's and PATH_RESPONSE's body).
  static var challengeBytes: Int { 8 }

  /// The candidate being validated; nil while the device is where the session is.
  private(set) var candidate: Candidate?

  /// A datagram of `size` bytes opened from `address`, which is not the session's address;
  /// `newest`: its counter is higher than every counter opened before. Returns the
  /// challenge to send to `address` (if its sealed size fits the budget, ``spend(_:)``), or
  /// nil. A newest one from an address other than the candidate's makes that address the
  /// candidate with a fresh challenge drawn by `draw`, replacing any outstanding one (so a
  /// copy moved by an attacker that won the race cannot block the device's real move: the
  /// device's next datagram is newer still). From the candidate's own address, it adds to
  /// the budget and the same challenge goes again (the first may have been lost). Anything
  /// else changes nothing (a late datagram, reordered: it moves nothing).
  mutating func heard(
    _ size: Int, from address: PeerAddress, newest: Bool, draw: () -> [UInt8]
  ) -> [UInt8]? {
    if var current = candidate, current.address == address {
      current.budget.receive(size)
      candidate = current
      return newest ? current.challenge : nil
    }
    guard newest else { return nil }
    let challenge = draw()
    guard challenge.count == Self.challengeBytes else {
      candidate = nil  // no challenge to be had: nothing to validate with
      return nil
    }
    candidate = Candidate(address: address, challenge: challenge)
    candidate?.budget.receive(size)
    return challenge
  }

  /// A newest datagram from the session's own address: the device did not move (someone
  /// moved a copy), so the outstanding candidate is dropped (§12.11, 2).
  mutating func heardAtSession(newest: Bool) {
    if newest { candidate = nil }
  }

  /// Counts `bytes` about to be sent to the candidate, if they fit its budget: false (and
  /// nothing counted: they must not be sent) otherwise, or without a candidate.
  mutating func spend(_ bytes: Int) -> Bool {
    guard var current = candidate, current.budget.spend(bytes) else { return false }
    candidate = current
    return true
  }

  /// A PATH_RESPONSE that opened, echoing `echo`, from `address`: the address the session
  /// moves to, if it is the candidate's and `echo` its challenge (compared by `equal`, in
  /// constant time); the candidate is then done. A response from anywhere else validates
  /// nothing (stricter than RFC 9000: from elsewhere it proves nothing about the candidate).
  mutating func validate(
    _ echo: ArraySlice<UInt8>, from address: PeerAddress,
    equal: (ArraySlice<UInt8>, ArraySlice<UInt8>) -> Bool
  ) -> PeerAddress? {
    guard let current = candidate, current.address == address,
      echo.count == Self.challengeBytes, equal(echo, current.challenge[...])
    else { return nil }
    candidate = nil
    return current.address
  }
}
