/// Finished operations of one class (completed and skipped, or the dead letters) kept oldest first, with the bytes
/// each counts for, within bounds on their count and bytes.
///
/// The DataPoint keeps slots by clock nanoseconds and a store's replay keeps ids by date: both ask the same questions
/// of it, what is beyond the bounds and what finished before a cutoff.
struct RetainedQueue<ID: Hashable & Sendable, Instant: Comparable & Sendable>: Sendable {
    let maximumCount: Int
    let maximumBytes: Int
    private var kept = FIFOQueue<(id: ID, finishedAt: Instant, bytes: Int)>()
    private(set) var bytes = 0

    init(maximumCount: Int, maximumBytes: Int) {
        self.maximumCount = maximumCount
        self.maximumBytes = maximumBytes
    }

    var count: Int { kept.count }
    /// When the oldest kept operation finished.
    var oldest: Instant? { kept.first?.finishedAt }

    mutating func append(_ id: ID, finishedAt: Instant, bytes: Int) {
        kept.append((id, finishedAt, bytes))
        self.bytes += bytes
    }

    /// Takes the oldest operation kept beyond the bounds on count and bytes, if any.
    mutating func takeExcess() -> ID? {
        guard kept.count > maximumCount || bytes > maximumBytes else { return nil }
        return popFirst()
    }

    /// Takes the oldest operation if it finished at or before `cutoff`.
    mutating func takeFinished(atOrBefore cutoff: Instant) -> ID? {
        guard let first = kept.first, first.finishedAt <= cutoff else { return nil }
        return popFirst()
    }

    /// Removes operations purged before their time.
    mutating func remove(_ ids: Set<ID>) {
        for entry in kept.remove(where: { ids.contains($0.id) }) { bytes -= entry.bytes }
    }

    private mutating func popFirst() -> ID? {
        guard let entry = kept.popFirst() else { return nil }
        bytes -= entry.bytes
        return entry.id
    }
}
