import Relay
import Synchronization

/// A clock that moves only when a test advances it.
///
/// Inject it into a DataPoint to drive holds, retries, metrics intervals and shutdown deadlines deterministically:
///
/// ```swift
/// let clock = ManualClock()
/// let point = try await DataPoint(storage: .volatile, clock: clock)
/// // ... hold an operation for five seconds ...
/// await clock.waitForSleepers(1)
/// clock.advance(by: .seconds(5))
/// ```
///
/// - Important: Sleeping until an instant that has passed returns at once, so advancing before a sleeper registers
///   loses nothing.
public final class ManualClock: Clock, Sendable, SleeperReportingClock {
    /// A point on the manual clock's timeline.
    public struct Instant: InstantProtocol, Sendable, Hashable, Comparable, CustomStringConvertible {
        /// Time since the clock's zero.
        public var offset: Duration

        /// Creates an instant.
        ///
        /// - Parameter offset: Time since the clock's zero.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// The clock's zero.
        public static let zero = Instant(offset: .zero)

        /// The instant `duration` later.
        ///
        /// - Parameter duration: How far to move.
        /// - Returns: The later instant.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        /// The time from this instant to another.
        ///
        /// - Parameter other: The other instant.
        /// - Returns: `other − self`.
        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        /// Orders instants.
        ///
        /// - Parameters:
        ///   - lhs: An instant.
        ///   - rhs: Another instant.
        /// - Returns: Whether `lhs` is earlier.
        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        /// The offset from zero.
        public var description: String { "ManualClock.Instant(\(offset))" }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        /// Told when the sleep ends, when an operation's executor sleeps.
        let observer: ClockSleepObserver?
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Instant
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 1
        var sleeperWaiters = CountWaiters()
    }

    private let state: Mutex<State>

    /// Creates a clock.
    ///
    /// - Parameter start: The clock's initial instant.
    public init(startingAt start: Instant = .zero) {
        state = Mutex(State(now: start))
    }

    /// The current instant.
    public var now: Instant { state.withLock(\.now) }

    /// One nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// How many tasks are sleeping on the clock right now.
    public var sleeperCount: Int { state.withLock(\.sleepers.count) }

    /// The earliest deadline any sleeper waits for.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    /// The deadlines of the tasks sleeping on the clock, earliest first.
    public var sleeperDeadlines: [Instant] { state.withLock { $0.sleepers.map(\.deadline).sorted() } }

    /// The sleepers and the clock's time, in words, for a test that stalls: `now +0 s; 2 sleepers, until +10 s, +30 s`.
    public var sleepersDescription: String {
        let (now, deadlines) = state.withLock { ($0.now, $0.sleepers.map(\.deadline).sorted()) }
        let listed = deadlines.map { "+\($0.offset)" }.joined(separator: ", ")
        return "now +\(now.offset); \(deadlines.count) sleeper\(deadlines.count == 1 ? "" : "s")"
            + (deadlines.isEmpty ? "" : ", until \(listed)")
    }

    /// Suspends until the clock reaches `deadline`.
    ///
    /// - Parameters:
    ///   - deadline: When to wake.
    ///   - tolerance: Ignored.
    /// - Throws: `CancellationError` when the sleeping task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let (id, passed) = state.withLock { state in
            defer { state.nextID += 1 }
            return (state.nextID, deadline <= state.now)
        }
        if passed { return try Task.checkCancellation() }
        // The executor of a running operation sleeps: the DataPoint counts it, so that a test's wait for idle fails
        // at once when only the clock could move the operation. Told before the sleeper registers, and its end after
        // it wakes, both from this task, so the two never cross.
        // Its end is told by whoever ends the sleep, before the sleeper resumes, so that the DataPoint never counts
        // a sleeper that was woken and has not run yet.
        let observer = ClockSleepObserver.current
        observer?.began()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, satisfied) = state.withLock {
                    state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers.append(
                        Sleeper(id: id, deadline: deadline, observer: observer, continuation: continuation))
                    return (nil, Self.takeSatisfiedWaiters(&state))
                }
                for waiter in satisfied { waiter.resume() }
                if let outcome {
                    observer?.ended()
                    continuation.resume(with: outcome)
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.observer?.ended()
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward and wakes every sleeper whose deadline has come, earliest first.
    ///
    /// - Parameter duration: How far to move; negative durations are ignored.
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: max(duration, .zero)))
    }

    /// Moves the clock to an instant, if it is later, and wakes every sleeper whose deadline has come.
    ///
    /// - Parameter instant: The new current instant.
    public func advance(to instant: Instant) {
        let due = state.withLock { state -> [Sleeper] in
            guard instant > state.now else { return [] }
            state.now = instant
            let due = state.sleepers.filter { $0.deadline <= instant }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= instant }
            return due
        }
        for sleeper in due {
            sleeper.observer?.ended()
            sleeper.continuation.resume()
        }
    }

    /// Returns once at least `count` tasks sleep on the clock, for example the DataPoint's timer.
    ///
    /// - Important: Cancelling the waiting task ends the wait early, so that a test's time limit ends a wait for a
    ///   sleeper that never comes.
    /// - Parameter count: How many sleepers to wait for.
    public func waitForSleepers(_ count: Int = 1) async {
        let id = state.withLock { $0.sleeperWaiters.makeID() }
        await CountWaiters.wait(
            park: { continuation in
                state.withLock { $0.sleeperWaiters.park(id, until: count, reached: $0.sleepers.count, continuation) }
            },
            cancel: { self.state.withLock { $0.sleeperWaiters.cancel(id) } }
        )
    }

    private static func takeSatisfiedWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        state.sleeperWaiters.takeSatisfied(by: state.sleepers.count)
    }
}
