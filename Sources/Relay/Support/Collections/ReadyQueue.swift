/// A sequence's ready operations in start order: higher priority first, then lower `order` (snapshot, then position
/// within the commit).
///
/// Operations usually become ready in order, so each priority keeps a FIFO for in-order arrivals (O(1)) and a heap
/// only for late ones, such as a dependent released after later commits were queued. Entries are removed lazily: the
/// pipeline skips a popped entry whose token no longer matches its slot.
struct ReadyQueue: Sendable {
    struct Entry: Comparable, Sendable {
        var order: UInt64
        var slot: Int32
        var token: UInt32

        static func < (lhs: Entry, rhs: Entry) -> Bool { lhs.order < rhs.order }
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.order == rhs.order }
    }

    private struct Bucket: Sendable {
        let priority: Int
        var inOrder = FIFOQueue<Entry>()
        var late = MinHeap<Entry>()

        var isEmpty: Bool { inOrder.isEmpty && late.isEmpty }

        mutating func push(_ entry: Entry) {
            if inOrder.last.map({ $0.order < entry.order }) ?? true {
                inOrder.append(entry)
            } else {
                late.push(entry)
            }
        }

        mutating func popFirst() -> Entry? {
            if let top = late.min, inOrder.first.map({ top < $0 }) ?? true {
                return late.popMin()
            }
            return inOrder.popFirst()
        }
    }

    /// Buckets sorted by descending priority; the last empty one is kept to reuse its storage.
    private var buckets: [Bucket] = []

    mutating func push(_ entry: Entry, priority: Int) {
        if let first = buckets.first, first.priority == priority {
            buckets[0].push(entry)
            return
        }
        var low = 0
        var high = buckets.count
        while low < high {
            let middle = (low + high) / 2
            if buckets[middle].priority > priority { low = middle + 1 } else { high = middle }
        }
        if low < buckets.count && buckets[low].priority == priority {
            buckets[low].push(entry)
        } else {
            var bucket = Bucket(priority: priority)
            bucket.push(entry)
            buckets.insert(bucket, at: low)
        }
    }

    /// Pops the first entry in start order, current or stale.
    mutating func popFirst() -> Entry? {
        while !buckets.isEmpty {
            if let entry = buckets[0].popFirst() { return entry }
            if buckets.count == 1 { return nil }
            buckets.removeFirst()
        }
        return nil
    }
}
