import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import Synchronization
import Testing

/// A DataPoint's enqueues joining a transaction of the application's, on a fleet.
@Suite(
    "S30 the application's own transaction", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetTransactionTests {
    private typealias Fleet = PostgresFleetTests

    private struct RolledBack: Error {}

    @Test("S30: an enqueue joins the application's transaction: it runs once that commits, and never if it rolls back")
    func joined() async throws {
        try await Fleet.withTwoProcesses { point, database in
            try await TestDatabase.withClient(database: database) { application in
                let logger = TestDatabase.logger
                let abandoned = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
                let enqueued = Mutex<[CallHandle]>([])
                // postgres-nio rethrows the closure's error wrapped in its own.
                await #expect(throws: (any Error).self) {
                    try await application.withTransaction(logger: logger) { connection in
                        let handles = try await PostgresFleetStorage.joining(connection) {
                            try await point.enqueue([abandoned])
                        }
                        enqueued.withLock { $0 = handles }
                        throw RolledBack()
                    }
                }
                // Its handle fails typed once the store finds that the transaction rolled back; nothing ran.
                let lost = try #require(enqueued.withLock { $0.first })
                let failure = await #expect(throws: RelayError.self) { try await lost.outcome }
                #expect(failure?.code == .unknownOperation, "\(String(describing: failure))")
                #expect(failure?.operationIDs == [abandoned.id])
                #expect(try await Fleet.count("SELECT count(*) FROM relay_operations", in: database) == 0)

                let kept = CallOperation(kind: Fleet.work, sequenceName: Fleet.right)
                let handles = try await application.withTransaction(logger: logger) { connection in
                    try await connection.query("CREATE TABLE orders (id uuid PRIMARY KEY)", logger: logger)
                    try await connection.query("INSERT INTO orders VALUES (\(kept.id))", logger: logger)
                    return try await PostgresFleetStorage.joining(connection) { try await point.enqueue([kept]) }
                }
                #expect(try await Fleet.ranBy(handles) == ["B": 1])
                #expect(try await Fleet.count("SELECT count(*) FROM orders", in: database) == 1)
                #expect(try await Fleet.count("SELECT count(*) FROM relay_operations", in: database) == 1)
            }
        }
    }

    @Test("S30: a document transaction joins the application's: its models appear once that commits, never if not")
    func documentJoined() async throws {
        typealias Memo = PostgresFleetDocumentTests.Memo
        try await PostgresFleetDocumentTests.withTwoPoints { first, second, database in
            try await TestDatabase.withClient(database: database) { application in
                let logger = TestDatabase.logger
                await #expect(throws: (any Error).self) {
                    try await application.withTransaction(logger: logger) { connection in
                        _ = try await PostgresFleetStorage.joining(connection) {
                            try await first.transaction { try $0.upsert(Memo(id: 1, text: "rolled back")) }
                        }
                        throw RolledBack()
                    }
                }
                // Not applied as the commit returned: the application's transaction had not committed.
                #expect(try first.model(Memo.self, id: 1) == nil)

                let heard = try first.changes(of: Memo.self)
                let elsewhere = try second.changes(of: Memo.self)
                _ = try await application.withTransaction(logger: logger) { connection in
                    try await PostgresFleetStorage.joining(connection) {
                        try await first.transaction { try $0.upsert(Memo(id: 2, text: "committed")) }
                    }
                }
                let change = await PostgresFleetDocumentTests.change(in: heard)
                #expect(try change?.model(as: Memo.self) == Memo(id: 2, text: "committed"))
                _ = await PostgresFleetDocumentTests.change(in: elsewhere)
                #expect(try first.models(Memo.self) == [Memo(id: 2, text: "committed")])
                #expect(try second.models(Memo.self) == [Memo(id: 2, text: "committed")])
                #expect(try await Fleet.count("SELECT count(*) FROM relay_models", in: database) == 1)
            }
        }
    }
}
