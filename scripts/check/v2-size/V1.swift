// SPDX-License-Identifier: Apache-2.0
// Version 1: the sessions read the socket's datagrams themselves; nothing is rewritten.
func probeChannelReceive(_ bytes: [UInt8], now: Instant) {
  channel.receive(datagram: bytes[...], now: now, into: &channelOut)
}
func probeChannelSecure(from first: Int, now: Instant) {}
func probeLoginReceive(_ bytes: [UInt8], now: Instant) {
  login.receive(datagram: bytes[...], now: now, into: &loginOut)
}
func probeLoginSecure(from first: Int, now: Instant) {}
