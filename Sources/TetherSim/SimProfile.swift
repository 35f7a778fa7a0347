// SPDX-License-Identifier: Apache-2.0
import TetherCore
import TetherEdge

/// What a profile brings to the simulator: its client, how its scenarios are drawn, and
/// its invariants. The world, the scenario and its runner are one for both profiles
/// (``World``, ``Scenario``, ``ScenarioRun``); a value of the profile is its checker: what
/// it knows of the clients, rebuilt from what they sent, were told and received (never a
/// session's private fields), and checked after every step.
public protocol SimProfile: SendableMetatype {
  associatedtype Client: SimClient where Client.Config == Config
  associatedtype Config: Sendable
  /// The app's calls a plan makes (join, leave, login, ...).
  associatedtype Call: Sendable, CustomStringConvertible

  /// What a run is called in reports ("login scenario").
  static var noun: String { get }

  // MARK: The plan (Scenario.generate)
  static var plan: PlanShape { get }
  /// The clients' thresholds (scaled by ten), drawn first.
  static func config(_ r: inout SeededRandom) -> Config
  /// Each of `count` clients' role (``Scenario/role``).
  static func roles(_ count: Int, _ r: inout SeededRandom) -> [Int]
  /// What client `i` does first (joins; logs in and joins channels).
  static func opening(_ i: Int, _ r: inout SeededRandom) -> [(
    at: Instant, action: ScenarioAction<Call>
  )]
  /// The instants (ms) that matter: events come around them.
  static func thresholds(_ config: Config) -> [UInt64]
  /// An event of the profile's own kind `kind` (``PlanShape/EventKind/other(_:)``).
  static func event(_ kind: Int, client: Int, _ r: inout SeededRandom) -> ScenarioAction<Call>
  /// Who client `i` is in `scenario`: its uid and channel, its user id.
  static func name(of i: Int, in scenario: Scenario<Self>) -> String

  // MARK: The run (ScenarioRun)
  init(_ scenario: Scenario<Self>)
  /// Plays `call` on the world, checking the call's own rules.
  mutating func perform(_ call: Call, on stage: inout Stage<Self>) throws(Violation)
  /// Checks everything that happened in the step just taken.
  mutating func observe(_ stage: inout Stage<Self>) throws(Violation)
  static func batch(
    seeds: Range<UInt64>, stats: inout ScenarioStats, setsAsideLate: Bool, attacksEdge: Bool
  )
    -> (seed: UInt64, violation: Violation)?
  /// The closing phase (``ScenarioRun/run()``): the calls that hand every client that can
  /// take one a fresh token once the network healed for good; the check that every client
  /// that is on agrees with the server; the calls that make every client leave.
  func freshTokens(_ stage: Stage<Self>) -> [Call]
  mutating func agree(_ client: Int, _ stage: inout Stage<Self>) throws(Violation)
  func goodbyes(_ stage: Stage<Self>) -> [Call]
}
