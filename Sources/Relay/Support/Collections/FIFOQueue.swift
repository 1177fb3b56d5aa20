/// A first-in, first-out queue on an array with a moving head, so popping is O(1); the dead prefix is dropped once it
/// outweighs the live part.
struct FIFOQueue<Element: Sendable>: Sendable {
    private var storage: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }
    var first: Element? { isEmpty ? nil : storage[head] }
    var last: Element? { isEmpty ? nil : storage[storage.count - 1] }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Appends elements in order; an empty queue adopts the array itself, which costs no copy.
    mutating func append(contentsOf elements: [Element]) {
        if isEmpty {
            storage = elements
            head = 0
        } else {
            storage.append(contentsOf: elements)
        }
    }

    mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Moves every element to the end of `destination`, oldest first; an empty destination takes the storage itself.
    mutating func drain(into destination: inout [Element]) {
        if head == 0 && destination.isEmpty {
            swap(&destination, &storage)
        } else {
            destination.append(contentsOf: storage[head...])
            storage.removeAll(keepingCapacity: true)
        }
        head = 0
    }

    /// Removes the elements that match, keeping the others in order, and returns them; O(count), for rare events.
    mutating func remove(where matches: (Element) -> Bool) -> [Element] {
        var removed: [Element] = []
        var kept: [Element] = []
        kept.reserveCapacity(count)
        for element in storage[head...] {
            if matches(element) { removed.append(element) } else { kept.append(element) }
        }
        storage = kept
        head = 0
        return removed
    }

    mutating func removeAll() {
        storage.removeAll()
        head = 0
    }
}
