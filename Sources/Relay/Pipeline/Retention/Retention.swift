/// Finished operations kept for re-attachment until their retention window passes, oldest first, and within the
/// bounds of the ``RetentionPolicy`` on their count and bytes: completed and skipped ones under the policy's window,
/// failed and cancelled ones, the dead letters, under their own.
///
/// The state machine hands each finished operation here and asks, when a commit or the timer loop comes by, which are
/// due to be forgotten; it alone decides whether a due operation can go yet (a dependency may still list it).
struct Retention: Sendable {
    /// How long the timer loop lets finished operations whose window has passed wait for a commit to forget them:
    /// a stream of finishing operations wakes it about once per gap rather than once per operation.
    static let sweepGap: Int64 = 1_000_000_000

    /// The windows, in clock nanoseconds; zero or less forgets an operation as it finishes.
    let window: Int64
    let deadLetterWindow: Int64
    private var finished: RetainedQueue<Int32, Int64>
    private var deadLetters: RetainedQueue<Int32, Int64>
    /// When finished operations were last forgotten; sweeps come at most once per ``sweepGap`` after it.
    private var lastSweep: Int64 = 0

    init(_ policy: RetentionPolicy) {
        window = policy.window.relayNanoseconds
        deadLetterWindow = policy.deadLetterWindow.relayNanoseconds
        finished = RetainedQueue(maximumCount: policy.maximumOperations, maximumBytes: policy.maximumBytes)
        deadLetters = RetainedQueue(
            maximumCount: policy.maximumDeadLetters, maximumBytes: policy.maximumDeadLetterBytes)
    }

    /// Whether an operation with this result is forgotten as it finishes.
    func forgetsAtOnce(deadLetter: Bool) -> Bool { (deadLetter ? deadLetterWindow : window) <= 0 }

    /// When the timer loop next forgets finished operations, or `nil` while none is kept or the windows outlast the
    /// clock: once the oldest one's window has passed, and no sooner than ``sweepGap`` after the last sweep.
    var nextSweep: Int64? {
        let due = [Self.due(finished.oldest, window), Self.due(deadLetters.oldest, deadLetterWindow)].compactMap { $0 }
        guard let first = due.min() else { return nil }
        return max(first, lastSweep &+ Self.sweepGap)
    }

    private static func due(_ oldest: Int64?, _ window: Int64) -> Int64? {
        guard let oldest else { return nil }
        let (due, overflow) = oldest.addingReportingOverflow(window)
        return overflow ? nil : due
    }

    /// When the timer loop next vacates forgotten operations that no commit has vacated yet (see
    /// ``OperationDirectory``): ``sweepGap`` after the last sweep.
    var nextVacate: Int64 { lastSweep &+ Self.sweepGap }

    /// Keeps an operation that finished at `finishedAt` and counts `bytes` (see
    /// ``RetentionPolicy/retainedSize(payload:result:)``); returns whether it is the only one of its class kept, so
    /// that the caller arms the timer for its window's end.
    mutating func keep(_ slot: Int32, finishedAt: Int64, bytes: Int, deadLetter: Bool) -> Bool {
        if deadLetter {
            deadLetters.append(slot, finishedAt: finishedAt, bytes: bytes)
        } else {
            finished.append(slot, finishedAt: finishedAt, bytes: bytes)
        }
        return (deadLetter ? deadLetters.count : finished.count) == 1
    }

    /// Keeps operations restored from storage, which may arrive in any order.
    mutating func keep(restored: [(finishedAt: Int64, slot: Int32, bytes: Int, deadLetter: Bool)]) {
        for entry in restored.sorted(by: { $0.finishedAt < $1.finishedAt }) {
            _ = keep(entry.slot, finishedAt: entry.finishedAt, bytes: entry.bytes, deadLetter: entry.deadLetter)
        }
    }

    /// Takes the oldest operation kept beyond the bounds on count and bytes of its class, if any.
    mutating func takeExcess() -> Int32? {
        finished.takeExcess() ?? deadLetters.takeExcess()
    }

    /// Takes up to `limit` operations whose window has passed at `now`, oldest first in each class, and whether more
    /// are due.
    mutating func takeDue(now: Int64, limit: Int) -> (slots: [Int32], more: Bool) {
        lastSweep = max(lastSweep, now)
        let cutoff = Self.cutoff(now, window)
        let deadLetterCutoff = Self.cutoff(now, deadLetterWindow)
        var due: [Int32] = []
        while due.count < limit, let slot = finished.takeFinished(atOrBefore: cutoff) { due.append(slot) }
        while due.count < limit, let slot = deadLetters.takeFinished(atOrBefore: deadLetterCutoff) { due.append(slot) }
        let more =
            finished.oldest.map { $0 <= cutoff } == true || deadLetters.oldest.map { $0 <= deadLetterCutoff } == true
        return (due, more)
    }

    /// The latest finish that a window has passed by `now`, saturating rather than overflowing.
    private static func cutoff(_ now: Int64, _ window: Int64) -> Int64 {
        let (cutoff, overflow) = now.subtractingReportingOverflow(window)
        guard overflow else { return cutoff }
        return window > 0 ? .min : .max
    }

    /// Stops keeping operations purged before their window passes.
    mutating func remove(_ slots: Set<Int32>) {
        finished.remove(slots)
        deadLetters.remove(slots)
    }
}
