// SPDX-License-Identifier: Apache-2.0
// The probe of scripts/check/v2-device-size.sh (never shipped: compiled by that script
// alone, into a module of its own). Both sessions, each driven through every entry point a
// driver calls: join or login, leave or logout, renew, advance and receive. Linked with
// V1.swift (the sessions' own receive, version 1's wire) or V2.swift (everything through
// SecureLink); the difference between the two is what version 2 costs the device.
nonisolated(unsafe) var channel = try! ChannelSession(
  config: ChannelConfig(appID: AppID(checked: [0x61])), random: ProbeRandom())
nonisolated(unsafe) var channelOut = ChannelOutput()
nonisolated(unsafe) var login = try! LoginSession(
  config: LoginConfig(appID: AppID(checked: [0x61])), random: ProbeRandom())
nonisolated(unsafe) var loginOut = LoginOutput()

@c func probe_channel_receive(_ p: UnsafePointer<UInt8>, _ n: Int, _ now: UInt64) {
  probeChannelReceive(
    Array(UnsafeBufferPointer(start: p, count: n)), now: Instant(nanoseconds: now))
}

@c func probe_channel_advance(_ now: UInt64) {
  let first = channelOut.actions.count
  channel.advance(to: Instant(nanoseconds: now), into: &channelOut)
  probeChannelSecure(from: first, now: Instant(nanoseconds: now))
}

@c func probe_channel_join(_ now: UInt64) {
  let first = channelOut.actions.count
  let at = Instant(nanoseconds: now)
  try? channel.join(
    token: Token(checked: [0x32]), channel: ChannelName(checked: [0x61]), uid: 1, now: at,
    into: &channelOut)
  channel.leave(now: at, into: &channelOut)
  try? channel.renewToken(Token(checked: [0x32]), now: at, into: &channelOut)
  probeChannelSecure(from: first, now: at)
}

@c func probe_login_receive(_ p: UnsafePointer<UInt8>, _ n: Int, _ now: UInt64) {
  probeLoginReceive(Array(UnsafeBufferPointer(start: p, count: n)), now: Instant(nanoseconds: now))
}

@c func probe_login_advance(_ now: UInt64) {
  let first = loginOut.actions.count
  login.advance(to: Instant(nanoseconds: now), into: &loginOut)
  probeLoginSecure(from: first, now: Instant(nanoseconds: now))
}

@c func probe_login_login(_ now: UInt64) {
  let first = loginOut.actions.count
  let at = Instant(nanoseconds: now)
  try? login.login(
    token: Token(checked: [0x32]), userID: UserID(checked: [0x61]), now: at, into: &loginOut)
  try? login.logout(now: at, into: &loginOut)
  try? login.renewToken(Token(checked: [0x32]), now: at, into: &loginOut)
  probeLoginSecure(from: first, now: at)
}

struct ProbeRandom: RandomNumberGenerator {
  var state: UInt64 = 1
  mutating func next() -> UInt64 {
    state ^= state << 13
    state ^= state >> 7
    state ^= state << 17
    return state
  }
}
