// SPDX-License-Identifier: Apache-2.0

/// What an edge of a fleet (docs/FLEET.md) says to the bus and hears from it, as values: the
/// edge's logic (``EdgeServer``) never calls the bus, it returns ``FleetCommand``s and is fed
/// ``FleetInput``s, as it returns datagrams and is fed them. A ``FleetBus`` carries them:
/// NATS for `tether-edge --fleet` (TetherFleet's `NatsFleetBus`), a model in tests.
///
/// The bus holds one JetStream key-value bucket per fleet (who is joined where: one record
/// per identity) and a few plain subjects (beacons, admin actions). Keys and subject tokens
/// are made by ``FleetName``, so no channel name or user id reaches the bus unencoded.
public protocol FleetBus: AnyObject {
  /// A descriptor that is readable while inputs wait (an eventfd): the edge's loop polls it
  /// beside its socket and calls ``takeInputs()`` when it is.
  var descriptor: Int32 { get }
  /// The inputs that arrived since the last call, in the order they arrived; never blocks.
  /// Clears the descriptor's readiness.
  func takeInputs() -> [FleetInput]
  /// Hands `commands` to the bus, in order; never blocks. A KV write is answered by one
  /// ``FleetInput/written(tag:_:)`` with its tag; a publish by nothing.
  func submit(_ commands: [FleetCommand])
}

/// What the edge asks of the bus.
public enum FleetCommand: Equatable, Sendable {
  /// A message on `subject` (under the fleet's prefix), fire and forget: no answer, and
  /// lost while the bus is down.
  case publish(subject: String, payload: [UInt8])
  /// A write to the fleet's bucket, answered by ``FleetInput/written(tag:_:)``.
  case write(FleetWrite)
  /// Tombstones of deleted keys are purged from the bucket (kept no longer than needed).
  case purgeDeletes
}

/// One conditional write to the fleet's bucket: never last writer wins.
public struct FleetWrite: Equatable, Sendable {
  public enum Operation: Equatable, Sendable {
    /// A key that does not exist (or was deleted) gets `value`; else ``FleetWriteResult/conflict``.
    case create([UInt8])
    /// `value` replaces the key's value if its revision is still `revision`; else conflict.
    case update([UInt8], revision: UInt64)
    /// The key is deleted if its revision is still `revision`; else conflict.
    case delete(revision: UInt64)
  }

  /// Names the answer (``FleetInput/written(tag:_:)``).
  public var tag: UInt64
  public var key: String
  public var operation: Operation

  public init(tag: UInt64, key: String, operation: Operation) {
    self.tag = tag
    self.key = key
    self.operation = operation
  }
}

/// How a ``FleetWrite`` ended.
public enum FleetWriteResult: Equatable, Sendable {
  /// Written: the key's new revision (a delete's tombstone revision).
  case written(revision: UInt64)
  /// The key's revision was not what the write expected (a create: it exists).
  case conflict
  /// The bus did not answer in time, or is down: the write may or may not have happened.
  case failed
}

/// What the bus tells the edge.
public enum FleetInput: Equatable, Sendable {
  /// The bus is reachable, the bucket exists (made if it was missing) and a new watcher
  /// started: the bucket's whole state follows as ``entry(_:)``s, then ``snapshotEnd``.
  /// Comes at the first connection and after every reconnection (the reconciliation).
  case up
  /// The bus was lost (disconnected, or a write timed out): writes fail until ``up``.
  case down
  /// A key's value changed (put) or the key was deleted or purged (value nil).
  case entry(FleetEntry)
  /// The watcher delivered the bucket's state as it was when it started.
  case snapshotEnd
  /// A message on one of the fleet's subjects (from any edge, this one's too), its subject
  /// as it was published (``FleetCommand/publish(subject:payload:)``: the bus's own prefix,
  /// if any, taken off).
  case message(subject: String, payload: [UInt8])
  /// The answer to the ``FleetWrite`` tagged `tag`.
  case written(tag: UInt64, FleetWriteResult)
}

/// One record of the fleet's bucket, as a watcher saw it.
public struct FleetEntry: Equatable, Sendable {
  public var key: String
  /// Nil for a delete or purge.
  public var value: [UInt8]?
  public var revision: UInt64

  public init(key: String, value: [UInt8]?, revision: UInt64) {
    self.key = key
    self.value = value
    self.revision = revision
  }
}
