// SPDX-License-Identifier: Apache-2.0

/// First in, first out, each element taken in amortized O(1): an array read from a head
/// index, its taken prefix dropped once it is at least half of it (each element moves at
/// most once per halving). `Array.removeFirst()` moves every element each time.
public struct FIFO<Element> {
  private var items: [Element] = []
  private var head = 0

  public init() {}

  public var isEmpty: Bool { head == items.count }
  public var count: Int { items.count - head }

  public mutating func append(_ element: Element) { items.append(element) }

  public mutating func append<S: Sequence>(contentsOf elements: S) where S.Element == Element {
    items.append(contentsOf: elements)
  }

  public mutating func popFirst() -> Element? {
    guard head < items.count else { return nil }
    let element = items[head]
    head += 1
    compact()
    return element
  }

  /// The first `limit` elements at most, taken.
  public mutating func popFirst(upTo limit: Int) -> [Element] {
    let end = min(items.count, head + limit)
    let taken = Array(items[head..<end])
    head = end
    compact()
    return taken
  }

  /// Every element left, taken; the queue is empty after.
  public mutating func removeAll() -> [Element] {
    let taken = Array(items[head...])
    items.removeAll()
    head = 0
    return taken
  }

  private mutating func compact() {
    if head == items.count {
      items.removeAll(keepingCapacity: items.count <= 4096)
      head = 0
    } else if head >= 4096 && head * 2 >= items.count {
      items.removeFirst(head)
      head = 0
    }
  }
}
