import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

private struct Order: Model {
    let id: String
    let total: Int
}

/// A DataPoint whose store is a real PostgreSQL database: what it acknowledged is there after a reopen, one process at
/// a time holds the store, and a write that fails acknowledges nothing.
@Suite(
    "S26 a DataPoint on PostgreSQL", .serialized, .timeLimit(.minutes(1)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresStorageTests {
    private static let echo = ClosureExecutor { operation, _ in .completed(operation.payload) }

    @Test("S26/S16: operations, their results, models and a suspension survive a reopen, and what waited then runs")
    func survivesReopen() async throws {
        try await TestDatabase.with { _, database in
            let configuration = try TestDatabase.connectionConfiguration(database: database)
            let done = CallOperation(kind: "echo", payload: Data("one".utf8))
            let waiting = CallOperation(kind: "echo", sequenceName: .downloads, payload: Data("two".utf8))
            try await DataPoint.with(storage: .postgres(configuration)) { point in
                point.register(Self.echo, for: "echo")
                try point.register(Order.self, as: "orders")
                #expect(try await point.execute(done) == Data("one".utf8))
                _ = try await point.sequence(named: .downloads)?.suspend()
                try await point.transaction { tx in
                    try tx.upsert(Order(id: "A-1", total: 42))
                    tx.enqueue(waiting)
                }
            }
            try await DataPoint.with(storage: .postgres(configuration)) { point in
                point.register(Self.echo, for: "echo")
                try point.register(Order.self, as: "orders")
                #expect(try await point.status(of: done.id)?.state == .finished(.completed(Data("one".utf8))))
                #expect(try point.model(Order.self, id: "A-1")?.total == 42)
                #expect(await point.sequence(named: .downloads)?.suspensionCount == 1)
                _ = try await point.sequence(named: .downloads)?.resume()
                #expect(try await point.handle(for: waiting.id).value == Data("two".utf8))
            }
        }
    }

    @Test("S26: while one DataPoint holds the store, another is refused with a typed error; once closed, it opens")
    func oneHolderAtATime() async throws {
        try await TestDatabase.with { _, database in
            let configuration = try TestDatabase.connectionConfiguration(database: database)
            let first = PostgresStorage(configuration: configuration)
            _ = try await first.open()
            let second = PostgresStorage(configuration: configuration)
            let error = await #expect(throws: RelayError.self) { _ = try await second.open() }
            #expect(error?.code == .storeLocked)
            try await first.close()
            let state = try await second.open()
            #expect(state.operations.isEmpty)
            try await second.close()
        }
    }

    @Test("S26/S16: a write the database refuses acknowledges nothing, and every later wait fails")
    func failedWriteAcknowledgesNothing() async throws {
        try await TestDatabase.with { client, database in
            let configuration = try TestDatabase.connectionConfiguration(database: database)
            let kept = CallOperation(kind: "echo", payload: Data("kept".utf8))
            let refused = CallOperation(kind: "echo", payload: Data("refused".utf8))
            // The store cannot close either: the scope says so as it ends.
            let closing = await #expect(throws: RelayError.self) {
                try await Self.runUntilRefused(
                    kept, refused, configuration: configuration, client: client, database: database)
            }
            #expect(closing?.code == .storageFailure)
            try await DataPoint.with(storage: .postgres(configuration)) { point throws in
                #expect(try await point.status(of: kept.id)?.state == .finished(.completed(Data("kept".utf8))))
                #expect(try await point.status(of: refused.id) == nil)
            }
        }
    }

    /// Runs `kept`, ends the store's connection from the server's side, and enqueues `refused`.
    private static func runUntilRefused(
        _ kept: CallOperation, _ refused: CallOperation, configuration: PostgresConnection.Configuration,
        client: PostgresClient, database: String
    ) async throws {
        try await DataPoint.with(storage: .postgres(configuration)) { point in
            point.register(Self.echo, for: "echo")
            #expect(try await point.execute(kept) == Data("kept".utf8))
            // The store's connection is ended from the server's side, as a restarted server would end it.
            try await client.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(database) AND pid <> pg_backend_pid()"
            )
            let error = await #expect(throws: RelayError.self) { try await point.enqueue(refused) }
            #expect(error?.code == .storageFailure)
            // Nothing more starts on a store that can no longer record it; the refused operation never runs.
            try await point.idle()
            guard case .pending(let waiting) = try await point.status(of: refused.id)?.state,
                waiting.name == "storeFailed"
            else {
                Issue.record("\(String(describing: try await point.status(of: refused.id)))")
                return
            }
        }
    }
}
