import Foundation
import Relay
import RelayTesting
import Synchronization
import Testing

/// Retries and holds on the real clock, for long enough that a cancellation landing between a timer wait's decision to
/// park and its parking would have stalled the timer loop for good.
@Suite("S8 S10: timers under stress", .timeLimit(.minutes(2)))
struct TimerStressTests {
    enum Store: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case volatile
        case file

        var testDescription: String { rawValue }
    }

    static let flaky: CallKind = "flaky"
    /// How long the stress runs at least.
    static let duration = Duration.seconds(30)
    /// How many rounds it runs at least, however slow the machine: on a loaded one, under ThreadSanitizer, 30 s may
    /// hold only a few rounds, and the stress goes on until it has run these.
    static let minimumRounds = 11
    /// How long one round may take before the test looks closer: a round takes milliseconds.
    static let stallLimit = Duration.seconds(10)
    /// How long a round that overran ``stallLimit`` gets again before the test calls it a stall.
    ///
    /// A loaded machine can deschedule the whole process for longer than the limit (seen under ThreadSanitizer with
    /// the suite running at once); the wait then ends as the process resumes, before the workers have had a turn. An
    /// engine that lost a wake-up stays stalled through the second wait too.
    static let secondChance = Duration.seconds(30)

    @Test(
        "S8 S10: fast retries and holds keep firing for 30 s and 11 rounds at least; no round stalls",
        arguments: Store.allCases)
    func fastRetriesAndHoldsNeverStall(store: Store) async throws {
        try await withTemporaryFolder { folder in
            let storage: any Storage = store == .volatile ? VolatileStorage() : FileStorage(at: folder.url)
            try await DataPoint.with(storage: storage, configuration: testConfiguration) { point in
                let attempts = Mutex<[UUID: Int]>([:])
                point.register(
                    ClosureExecutor { operation, _ in
                        let attempt = attempts.withLock { counts in
                            counts[operation.id, default: 0] += 1
                            return counts[operation.id]!
                        }
                        return attempt < 3 ? .retry(after: .microseconds(200), reason: "again") : .completed(Data())
                    },
                    for: Self.flaky
                )
                _ = try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
                let policy = RetryPolicy(maximumAttempts: 5, initialDelay: .microseconds(500), jitter: .full)
                let end = ContinuousClock.now + Self.duration
                var rounds = 0
                while ContinuousClock.now < end || rounds < Self.minimumRounds {
                    let operations = (0..<32).map { _ in CallOperation(kind: Self.flaky, retryPolicy: policy) }
                    let handles = try await point.enqueue(operations)
                    for operation in operations.prefix(4) {
                        // An operation may have finished already; a hold on it is then a typed error, and harmless.
                        try? await point.hold(operation.id, until: Date().addingTimeInterval(0.000_5))
                    }
                    let awaitAll: @Sendable () async throws -> Void = {
                        for handle in handles { _ = try await handle.value }
                    }
                    var stalled = try await Self.stalls(within: Self.stallLimit, awaitAll)
                    if stalled { stalled = try await Self.stalls(within: Self.secondChance, awaitAll) }
                    // A stall leaves operations unfinished; a round that a loaded machine (ThreadSanitizer, the
                    // whole suite at once) only made slow has finished them all by the time it is looked at.
                    let waiting = try await point.states(of: operations.map(\.id)).compactMap { $0 }.filter {
                        !$0.isTerminal
                    }
                    if stalled && !waiting.isEmpty {
                        Issue.record("round \(rounds) stalled: \(waiting.count) operations unfinished: \(waiting)")
                        return
                    }
                    rounds += 1
                }
            }
        }
    }

    /// Runs `body`; `true` when it did not finish within `limit` (it is then cancelled).
    ///
    /// The sleep here bounds a wait that must end on its own; it orders nothing.
    static func stalls(within limit: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws -> Bool
    {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await body()
                return false
            }
            group.addTask {
                try await Task.sleep(for: limit)
                return true
            }
            let stalled = try await group.next() ?? true
            group.cancelAll()
            return stalled
        }
    }
}
