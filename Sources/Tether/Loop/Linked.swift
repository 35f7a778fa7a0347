// SPDX-License-Identifier: Apache-2.0
/// A class kept in a singly linked list of its own kind: the registry's loop contexts, a
/// loop's shared sockets. Lists of a few, and no array type of their own in the Embedded
/// library.
protocol Linked: AnyObject {
  var nextInList: Self? { get set }
}

extension Linked {
  /// Takes this node out of the list that starts at `first`.
  func unlink(from first: inout Self?) {
    if first === self {
      first = nextInList
    } else {
      var previous = first
      while let candidate = previous, candidate.nextInList !== self {
        previous = candidate.nextInList
      }
      previous?.nextInList = nextInList
    }
    nextInList = nil
  }
}
