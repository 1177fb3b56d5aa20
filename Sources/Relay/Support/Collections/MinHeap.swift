/// A binary min-heap; the smallest element is at the top.
struct MinHeap<Element: Comparable & Sendable>: Sendable {
    private var storage: [Element] = []

    init() {}

    /// A heap of the elements.
    init(_ elements: some Sequence<Element>) {
        // A sorted array is a heap.
        storage = elements.sorted()
    }

    /// The elements, in no particular order.
    var elements: [Element] { storage }

    var isEmpty: Bool { storage.isEmpty }
    var count: Int { storage.count }
    var min: Element? { storage.first }

    mutating func push(_ element: Element) {
        storage.append(element)
        var child = storage.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard storage[child] < storage[parent] else { break }
            storage.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popMin() -> Element? {
        guard let last = storage.popLast() else { return nil }
        guard !storage.isEmpty else { return last }
        let top = storage[0]
        storage[0] = last
        var parent = 0
        let count = storage.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            let right = left + 1
            let smaller = right < count && storage[right] < storage[left] ? right : left
            guard storage[smaller] < storage[parent] else { break }
            storage.swapAt(smaller, parent)
            parent = smaller
        }
        return top
    }
}
