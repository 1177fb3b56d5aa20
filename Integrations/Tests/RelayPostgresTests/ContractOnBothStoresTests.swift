import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Synchronization
import Testing

/// Points of the contract that hold whatever the store, run with the same code on a file store and on a fleet's
/// database (S26: every point of S1 to S25 holds on the fleet unless the Guarantees article names it).
///
/// One at a time, so that the suite takes a few of the server's connections beside the other suites.
@Suite(
    "S26 the contract on both stores", .serialized, .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct ContractOnBothStoresTests {
    enum Store: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case file, fleet

        var testDescription: String { rawValue }
    }

    static let work = CallKind(rawValue: "work")
    static let orders = CallSequence.Name(rawValue: "orders")

    struct Memo: Model, Equatable {
        let id: Int
        var text: String
    }

    /// Runs `body` with a DataPoint on `store`, `orders` registered with `bunchSize`, `memos` holding `Memo`, and
    /// `executor` running `work`.
    static func with<Result: Sendable>(
        _ store: Store, bunchSize: Int = 1, executor: any CallExecutor = ClosureExecutor { _, _ in .completed(Data()) },
        _ body: @Sendable (DataPoint) async throws -> Result
    ) async throws -> Result {
        switch store {
        case .file:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("relay-contract-\(UUID())")
            defer { try? FileManager.default.removeItem(at: folder) }
            return try await run(on: .file(at: folder), bunchSize: bunchSize, executor: executor, body)
        case .fleet:
            return try await TestDatabase.with { client, _ in
                try await run(
                    on: PostgresFleetStorage(client: client, options: PostgresFleetTests.options()),
                    bunchSize: bunchSize, executor: executor, body)
            }
        }
    }

    private static func run<Result: Sendable>(
        on storage: some Storage, bunchSize: Int, executor: any CallExecutor,
        _ body: @Sendable (DataPoint) async throws -> Result
    ) async throws -> Result {
        try await DataPoint.with(storage: storage, executors: [work: executor]) { point in
            try point.register(Memo.self, as: "memos")
            try await point.upsertCallSequence(CallSequence(name: orders, bunchSize: bunchSize))
            return try await body(point)
        }
    }

    static func operation(
        id: UUID = UUID(), payload: String = "", after dependencies: Set<UUID> = [], runAnyway: Bool = false
    ) -> CallOperation {
        CallOperation(
            id: id, kind: work, sequenceName: orders, dependencies: dependencies, payload: Data(payload.utf8),
            retryPolicy: RetryPolicy(maximumAttempts: 1), onDependencyFailure: runAnyway ? .runAnyway : .cancel)
    }

    /// An executor that answers with the payload, and fails an operation whose payload is `fail`.
    static let echo = ClosureExecutor { operation, _ in
        operation.payload == Data("fail".utf8) ? .failed(reason: "asked to fail") : .completed(operation.payload)
    }

    @Test(
        "S1: a known id returns its handle and changes nothing; the same id with other content is refused",
        arguments: Store.allCases)
    func identity(_ store: Store) async throws {
        try await Self.with(store, executor: Self.echo) { point in
            let id = UUID()
            let first = try await point.enqueue(Self.operation(id: id, payload: "one"))
            let again = try await point.enqueue(Self.operation(id: id, payload: "one"))
            #expect(again.id == first.id)
            #expect(try await again.value == Data("one".utf8))
            let conflict = await #expect(throws: RelayError.self) {
                try await point.enqueue(Self.operation(id: id, payload: "two"))
            }
            #expect(conflict?.code == .conflictingOperation)
        }
    }

    @Test("S2: each enqueue is one commit, numbered one more than the last", arguments: Store.allCases)
    func commitsNumbered(_ store: Store) async throws {
        try await Self.with(store) { point in
            let events = point.events()
            _ = try await point.enqueue([Self.operation(), Self.operation()])
            _ = try await point.enqueue(Self.operation())
            var snapshots: [UInt64] = []
            for await event in events where event.kind.isEnqueued {
                guard let snapshot = event.kind.snapshot else { continue }
                snapshots.append(snapshot)
                if snapshots.count == 3 { break }
            }
            #expect(snapshots.count == 3 && snapshots[0] == snapshots[1] && snapshots[2] == snapshots[0] + 1)
        }
    }

    @Test(
        "S4: at most the bunch size runs at once, and equal priorities start in call order", arguments: Store.allCases)
    func bunchAndOrder(_ store: Store) async throws {
        let running = Mutex((now: 0, most: 0))
        let executor = ClosureExecutor { _, _ in
            running.withLock { state in
                state.now += 1
                state.most = max(state.most, state.now)
            }
            for _ in 0..<50 { await Task.yield() }
            running.withLock { $0.now -= 1 }
            return .completed(Data())
        }
        try await Self.with(store, bunchSize: 2, executor: executor) { point in
            let events = point.events()
            let operations = (0..<20).map { Self.operation(payload: String($0)) }
            let handles = try await point.enqueue(operations)
            // The start order is the engine's, as its events tell it; an executor's first line may run later.
            var started: [UUID] = []
            for await event in events where event.kind.isStarted {
                if let id = event.operationID { started.append(id) }
                if started.count == operations.count { break }
            }
            for handle in handles { _ = try await handle.value }
            #expect(started == operations.map(\.id))
        }
        #expect(running.withLock { $0.most } <= 2)
    }

    @Test(
        "S5: an unknown dependency and a cycle are refused, and nothing of the commit is enqueued",
        arguments: Store.allCases)
    func badDependencies(_ store: Store) async throws {
        try await Self.with(store) { point in
            let lone = Self.operation(after: [UUID()])
            let unknown = await #expect(throws: RelayError.self) { try await point.enqueue([Self.operation(), lone]) }
            #expect(unknown?.code == .unknownDependency)
            let (a, b) = (UUID(), UUID())
            let cycle = await #expect(throws: RelayError.self) {
                try await point.enqueue([Self.operation(id: a, after: [b]), Self.operation(id: b, after: [a])])
            }
            #expect(cycle?.code == .dependencyCycle)
            let statuses = (try await point.status(of: lone.id), try await point.status(of: a))
            #expect(statuses.0 == nil && statuses.1 == nil)
        }
    }

    @Test(
        "S5: a failed dependency cancels its dependents transitively, naming it; one that runs anyway runs",
        arguments: Store.allCases)
    func failureCascades(_ store: Store) async throws {
        try await Self.with(store, executor: Self.echo) { point in
            let failing = Self.operation(payload: "fail")
            let child = Self.operation(after: [failing.id])
            let grandchild = Self.operation(after: [child.id])
            let stubborn = Self.operation(payload: "ran", after: [failing.id], runAnyway: true)
            let handles = try await point.enqueue([failing, child, grandchild, stubborn])
            guard case .failed = try await handles[0].outcome else {
                Issue.record("the failing operation did not fail")
                return
            }
            #expect(try await handles[1].outcome == .cancelled(.dependencyFailed(failing.id)))
            #expect(try await handles[2].outcome == .cancelled(.dependencyCancelled(child.id)))
            #expect(try await handles[3].value == Data("ran".utf8))
        }
    }

    @Test(
        "S10/S11: a hold keeps an operation waiting until released; a cancel ends a waiting one and its dependents",
        arguments: Store.allCases)
    func holdsAndCancels(_ store: Store) async throws {
        try await Self.with(store, executor: Self.echo) { point in
            try await point.suspend()
            let held = Self.operation(payload: "held")
            let cancelled = Self.operation()
            let dependent = Self.operation(after: [cancelled.id])
            let handles = try await point.enqueue([held, cancelled, dependent])
            try await point.hold(held.id, until: Date(timeIntervalSinceNow: 3600))
            #expect(try await point.cancel(cancelled.id))
            try await point.resume()
            #expect(try await handles[1].outcome == .cancelled(.requested))
            #expect(try await handles[2].outcome == .cancelled(.dependencyCancelled(cancelled.id)))
            guard case .pending = try await point.status(of: held.id)?.state else {
                Issue.record("the held operation did not wait")
                return
            }
            try await point.hold(held.id, until: nil)
            #expect(try await handles[0].value == Data("held".utf8))
        }
    }

    @Test("S12: execute answers with the value, and a failure throws typed with its reason", arguments: Store.allCases)
    func awaiting(_ store: Store) async throws {
        try await Self.with(store, executor: Self.echo) { point in
            let answer = try await point.execute(Self.operation(payload: "answer"))
            #expect(answer == Data("answer".utf8))
            let failure = await #expect(throws: RelayError.self) {
                try await point.execute(Self.operation(payload: "fail"))
            }
            #expect(failure?.code == .operationFailed)
            #expect(failure?.message.contains("asked to fail") == true)
        }
    }

    @Test(
        "S20: a transaction's models and operations commit together; a rejected one changes nothing",
        arguments: Store.allCases)
    func transactions(_ store: Store) async throws {
        try await Self.with(store, executor: Self.echo) { point in
            let handles = try await point.transaction { transaction in
                try transaction.upsert(Memo(id: 1, text: "one"))
                try transaction.setValue(7, forKey: "count")
                transaction.enqueue(Self.operation(payload: "with it"))
            }
            #expect(try point.model(Memo.self, id: 1) == Memo(id: 1, text: "one"))
            #expect(try point.value(Int.self, forKey: "count") == 7)
            #expect(try await handles[0].value == Data("with it".utf8))
            let rejected = await #expect(throws: RelayError.self) {
                try await point.transaction { transaction in
                    try transaction.upsert(Memo(id: 2, text: "two"))
                    transaction.enqueue(Self.operation(after: [UUID()]))
                }
            }
            #expect(rejected?.code == .unknownDependency)
            #expect(try point.model(Memo.self, id: 2) == nil)
        }
    }

    @Test("S21: an executor's staged models commit with its completion", arguments: Store.allCases)
    func completionWithChanges(_ store: Store) async throws {
        let staging = ClosureExecutor { operation, context in
            try context.stage { try $0.upsert(Memo(id: 9, text: String(decoding: operation.payload, as: UTF8.self))) }
            return .completed(Data())
        }
        try await Self.with(store, executor: staging) { point in
            _ = try await point.execute(Self.operation(payload: "staged"))
            #expect(try point.model(Memo.self, id: 9) == Memo(id: 9, text: "staged"))
        }
    }

    @Test(
        "S23: relations need both models; removing one removes its relations; erasure cascades to what it owns",
        arguments: Store.allCases)
    func relations(_ store: Store) async throws {
        try await Self.with(store) { point in
            let (order, line, shared, keeper) = (
                Memo(id: 1, text: "order"), Memo(id: 2, text: "line"), Memo(id: 3, text: "shared"),
                Memo(id: 4, text: "keeper")
            )
            try await point.transaction { transaction in
                for memo in [order, line, shared, keeper] { try transaction.upsert(memo) }
                try transaction.relate(order, .owns, line)
                try transaction.relate(order, .owns, shared)
                try transaction.relate(keeper, .owns, shared)
            }
            let missing = await #expect(throws: RelayError.self) {
                try await point.transaction { try $0.relate(order, .free, Memo(id: 99, text: "never")) }
            }
            #expect(missing?.code == .modelNotFound)
            try await point.transaction { try $0.erase(order) }
            #expect(try point.models(Memo.self).map(\.id).sorted() == [3, 4])
            #expect(try point.related(to: shared, by: .ownedBy, as: Memo.self) == [keeper])
            try await point.transaction { try $0.remove(Memo.self, id: 4) }
            #expect(try point.related(to: shared, by: .ownedBy, as: Memo.self).isEmpty)
        }
    }
}
