// SPDX-License-Identifier: Apache-2.0
// Version 2: every datagram in through SecureLink, every output rewritten by it, over the
// stand-in seam of ProbeCrypto.swift.
nonisolated(unsafe) var channelLink = SecureLink(crypto: ProbeCrypto())
nonisolated(unsafe) var loginLink = SecureLink(crypto: ProbeCrypto())

func probeChannelReceive(_ bytes: [UInt8], now: Instant) {
  channelLink.receive(bytes[...], session: &channel, now: now, into: &channelOut)
}
func probeChannelSecure(from first: Int, now: Instant) {
  channelLink.secure(&channelOut, from: first, session: &channel, now: now)
}
func probeLoginReceive(_ bytes: [UInt8], now: Instant) {
  loginLink.receive(bytes[...], session: &login, now: now, into: &loginOut)
}
func probeLoginSecure(from first: Int, now: Instant) {
  loginLink.secure(&loginOut, from: first, session: &login, now: now)
}
