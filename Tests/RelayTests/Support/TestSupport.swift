import Foundation
import Relay
import RelayTesting
import Synchronization

/// A store that keeps every record it is given, so tests can check what was (and was not) recorded, and that can
/// hand a prepared state to the pipeline when it opens.
final class RecordingStorage: Storage {
    private let recorded = Mutex<[StorageRecord]>([])
    private let stored: StoredState

    init(stored: StoredState = .empty) {
        self.stored = stored
    }

    var records: [StorageRecord] { recorded.withLock { $0 } }

    func open() async throws -> StoredState { stored }

    func append(_ records: [StorageRecord]) -> StorageTicket {
        recorded.withLock { $0.append(contentsOf: records) }
        return .durable
    }

    func waitUntilDurable(_ ticket: StorageTicket) async throws {}

    func close() async throws {}
}

/// Counts how many executions overlap and remembers the most seen at once.
final class ConcurrencyTracker: Sendable {
    private let state = Mutex((current: 0, maximum: 0, total: 0))

    func enter() {
        state.withLock { state in
            state.current += 1
            state.total += 1
            state.maximum = max(state.maximum, state.current)
        }
    }

    func leave() {
        state.withLock { $0.current -= 1 }
    }

    var maximum: Int { state.withLock(\.maximum) }
    var total: Int { state.withLock(\.total) }
}

/// Collects values in arrival order from concurrent tasks.
final class Log<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func append(_ value: Value) {
        values.withLock { $0.append(value) }
    }

    var all: [Value] { values.withLock { $0 } }
    var count: Int { values.withLock(\.count) }
}

extension CallKind {
    static let noop: CallKind = "noop"
    static let echo: CallKind = "echo"
    static let gated: CallKind = "gated"
}

extension EventRecorder {
    /// Ids of operations in the order their first attempts started.
    func startOrder() -> [UUID] {
        var seen = Set<UUID>()
        return events.compactMap { event in
            guard event.kind.isStarted, let id = event.operationID, seen.insert(id).inserted else { return nil }
            return id
        }
    }

    /// Waits until `count` attempts have started.
    func waitForStarts(_ count: Int) async {
        await waitFor(count) { $0.kind.isStarted }
    }

    /// Waits until `count` operations have finished.
    func waitForTerminals(_ count: Int) async {
        await waitFor(count) { $0.kind.isTerminal }
    }
}

extension DataPoint {
    /// Registers the executors most tests use: `noop` completes at once, `echo` returns the payload.
    nonisolated func registerBasics() {
        register(ClosureExecutor { _, _ in .completed(Data()) }, for: .noop)
        register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: .echo)
    }
}

extension DataPoint {
    /// Registers `.gated`: each attempt waits at the gate, then completes with `result`.
    nonisolated func registerGated(_ gate: Gate, result: Data = Data()) {
        register(
            ClosureExecutor { _, _ in
                await gate.wait()
                return .completed(result)
            }, for: .gated)
    }

    /// Registers a kind whose attempts arrive at `started`, then run until their task is cancelled.
    nonisolated func registerUntilCancelled(_ kind: CallKind, started: Gate) {
        started.open()
        register(
            ClosureExecutor { _, _ in
                await started.wait()
                try await untilCancelled()
                return .completed(Data())
            },
            for: kind
        )
    }
}

/// Suspends until the task is cancelled, then throws `CancellationError`.
func untilCancelled() async throws {
    let (never, continuation) = AsyncStream<Void>.makeStream()
    // Iteration ends only when the task is cancelled; using the continuation afterwards keeps the stream open.
    for await _ in never {}
    continuation.finish()
    throw CancellationError()
}

/// Configuration for tests on a manual clock: RelayTesting's preset, whose shutdown does not wait on the clock.
let testConfiguration = DataPoint.Configuration.testing

/// Runs `body` with a running DataPoint of RelayTesting's preset, with the test executors registered.
func withManualPoint<Result>(
    storage: some Storage = VolatileStorage(),
    configuration: DataPoint.Configuration = testConfiguration,
    _ body: (DataPoint, ManualClock) async throws -> Result
) async throws -> Result {
    try await DataPoint.testing(storage: storage, configuration: configuration) { point, clock in
        point.registerBasics()
        return try await body(point, clock)
    }
}

extension DataPoint {
    /// The states of `ids` in their order, `nil` for an operation the DataPoint does not know.
    func states(of ids: [UUID]) async throws -> [CallStatus.State?] {
        var states: [CallStatus.State?] = []
        for id in ids { states.append(try await status(of: id)?.state) }
        return states
    }
}
