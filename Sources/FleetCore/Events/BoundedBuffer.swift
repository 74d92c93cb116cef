/// A FIFO of at most `capacity` elements that drops the oldest when full.
struct BoundedBuffer<Element> {
    let capacity: Int
    private var storage: [Element] = []
    private var head = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { storage.count - head }
    var isEmpty: Bool { count == 0 }

    /// Appends `element`; returns true when the oldest element was dropped to make room.
    mutating func append(_ element: Element) -> Bool {
        storage.append(element)
        guard count > capacity else { return false }
        head += 1
        compactIfNeeded()
        return true
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        compactIfNeeded()
        return element
    }

    private mutating func compactIfNeeded() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= capacity {
            storage.removeFirst(head)
            head = 0
        }
    }
}

extension BoundedBuffer: Sendable where Element: Sendable {}
