/// Finished operations kept for re-attachment until their retention window passes, oldest first, and within the
/// bounds of the ``RetentionPolicy`` on their count and bytes.
///
/// The state machine hands each finished operation here and asks, when a commit or the timer loop comes by, which are
/// due to be forgotten; it alone decides whether a due operation can go yet (a dependency may still list it).
struct Retention: Sendable {
    /// How long the timer loop lets finished operations whose window has passed wait for a commit to forget them:
    /// a stream of finishing operations wakes it about once per gap rather than once per operation.
    static let sweepGap: Int64 = 1_000_000_000

    /// The window, in clock nanoseconds; zero or less forgets an operation as it finishes.
    let window: Int64
    let maximumOperations: Int
    let maximumBytes: Int
    private var kept = FIFOQueue<(finishedAt: Int64, slot: Int32, bytes: Int)>()
    private var keptBytes = 0
    /// When finished operations were last forgotten; sweeps come at most once per ``sweepGap`` after it.
    private var lastSweep: Int64 = 0

    init(window: Int64, maximumOperations: Int = .max, maximumBytes: Int = .max) {
        self.window = window
        self.maximumOperations = maximumOperations
        self.maximumBytes = maximumBytes
    }

    /// Whether finished operations are forgotten as they finish.
    var forgetsAtOnce: Bool { window <= 0 }

    /// When the timer loop next forgets finished operations, or `nil` while none is kept or the window outlasts the
    /// clock: once the oldest one's window has passed, and no sooner than ``sweepGap`` after the last sweep.
    var nextSweep: Int64? {
        guard let oldest = kept.first else { return nil }
        let (due, overflow) = oldest.finishedAt.addingReportingOverflow(window)
        guard !overflow else { return nil }
        return max(due, lastSweep &+ Self.sweepGap)
    }

    /// When the timer loop next vacates forgotten operations that no commit has vacated yet (see
    /// ``OperationDirectory``): ``sweepGap`` after the last sweep.
    var nextVacate: Int64 { lastSweep &+ Self.sweepGap }

    /// Keeps an operation that finished at `finishedAt` and counts `bytes` (see
    /// ``RetentionPolicy/retainedSize(payload:result:)``); returns whether it is the only one kept, so that the caller
    /// arms the timer for its window's end.
    mutating func keep(_ slot: Int32, finishedAt: Int64, bytes: Int) -> Bool {
        kept.append((finishedAt, slot, bytes))
        keptBytes += bytes
        return kept.count == 1
    }

    /// Keeps operations restored from storage, which may arrive in any order.
    mutating func keep(restored: [(finishedAt: Int64, slot: Int32, bytes: Int)]) {
        for entry in restored.sorted(by: { $0.finishedAt < $1.finishedAt }) {
            kept.append(entry)
            keptBytes += entry.bytes
        }
    }

    /// Takes the oldest operation kept beyond the bounds on count and bytes, if any.
    mutating func takeExcess() -> Int32? {
        guard kept.count > maximumOperations || keptBytes > maximumBytes, let oldest = kept.popFirst() else {
            return nil
        }
        keptBytes -= oldest.bytes
        return oldest.slot
    }

    /// Takes up to `limit` operations whose window has passed at `now`, oldest first, and whether more are due.
    mutating func takeDue(now: Int64, limit: Int) -> (slots: [Int32], more: Bool) {
        lastSweep = max(lastSweep, now)
        let deadline = now - window
        var due: [Int32] = []
        while due.count < limit, let entry = kept.first, entry.finishedAt <= deadline {
            _ = kept.popFirst()
            keptBytes -= entry.bytes
            due.append(entry.slot)
        }
        return (due, kept.first.map { $0.finishedAt <= deadline } ?? false)
    }
}
