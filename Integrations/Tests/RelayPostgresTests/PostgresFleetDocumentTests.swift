import Foundation
import PostgresNIO
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// The fleet's document: every process holds it all, and applies each commit's changes in the order of the commits.
@Suite(
    "S20 S29 the document on a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetDocumentTests {
    typealias Fleet = PostgresFleetTests

    struct Memo: Model, Equatable {
        let id: Int
        var text: String
    }

    /// Runs `body` with DataPoints of two processes on one new database, each on a client of its own, both with
    /// `Memo` registered as `memos`.
    static func withTwoPoints<Result: Sendable>(
        _ body: @Sendable (DataPoint, DataPoint, String) async throws -> Result
    ) async throws -> Result {
        try await TestDatabase.with { client, database in
            try await TestDatabase.withClient(database: database) { other in
                try await DataPoint.with(
                    storage: PostgresFleetStorage(client: client, options: Fleet.options()),
                    executors: [Fleet.work: Fleet.runner("A")]
                ) { first in
                    try first.register(Memo.self, as: "memos")
                    try await first.upsertCallSequence(CallSequence(name: Fleet.left, bunchSize: 4))
                    return try await DataPoint.with(
                        storage: PostgresFleetStorage(client: other, options: Fleet.options())
                    ) { second in
                        try second.register(Memo.self, as: "memos")
                        return try await body(first, second, database)
                    }
                }
            }
        }
    }

    /// The first change of `stream` at `version` or later.
    static func change(
        in stream: CallEventStream, atLeast version: UInt64 = 0
    ) async -> DocumentChange? {
        for await event in stream {
            if let change = event.kind.change, change.snapshot >= version { return change }
        }
        return nil
    }

    @Test("S20/S29: a transaction's models and values commit with its operations and reach the other process's reads")
    func modelsReachEveryProcess() async throws {
        try await Self.withTwoPoints { first, second, database in
            let heard = try second.changes(of: Memo.self)
            let handles = try await first.transaction { transaction in
                try transaction.upsert(Memo(id: 1, text: "first"))
                try transaction.setValue("on", forKey: "mode")
                transaction.enqueue(CallOperation(kind: Fleet.work, sequenceName: Fleet.left))
            }
            // Readers of the committing process see the models once the commit returns.
            #expect(try first.model(Memo.self, id: 1) == Memo(id: 1, text: "first"))
            let change = await Self.change(in: heard)
            #expect(try change?.model(as: Memo.self) == Memo(id: 1, text: "first"))
            #expect(try second.model(Memo.self, id: 1) == Memo(id: 1, text: "first"))
            #expect(try second.value(String.self, forKey: "mode") == "on")
            #expect(try await handles[0].value == Data("A".utf8))
            // The same commit: the operation's snapshot is the models' version.
            #expect(
                try await Fleet.count(
                    """
                    SELECT count(*) FROM relay_models m JOIN relay_operations o ON o.snapshot = m.version
                    WHERE m.collection = 'memos'
                    """, in: database) == 1)

            // A removal reaches the other process too.
            let removals = try first.changes(of: Memo.self)
            try await second.transaction { transaction in try transaction.remove(Memo.self, id: 1) }
            #expect(await Self.change(in: removals)?.isRemoval == true)
            #expect(try first.model(Memo.self, id: 1) == nil)
        }
    }

    @Test("S20/S29: two processes writing one model at once end with the same model, the later commit's")
    func concurrentWritesConverge() async throws {
        try await Self.withTwoPoints { first, second, database in
            let firstHeard = try first.changes(of: Memo.self)
            let secondHeard = try second.changes(of: Memo.self)
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await first.transaction { try $0.upsert(Memo(id: 3, text: "from the first")) } }
                group.addTask { try await second.transaction { try $0.upsert(Memo(id: 3, text: "from the second")) } }
            }
            let latest = UInt64(try await Fleet.count("SELECT max(version) FROM relay_models", in: database))
            _ = await Self.change(in: firstHeard, atLeast: latest)
            _ = await Self.change(in: secondHeard, atLeast: latest)
            let kept = try first.model(Memo.self, id: 3)
            #expect(kept != nil)
            #expect(try second.model(Memo.self, id: 3) == kept)
        }
    }

    @Test("S26: a DataPoint opened on the fleet's database loads the document the other processes wrote")
    func reopenLoadsDocument() async throws {
        try await TestDatabase.with { client, _ in
            let options = Fleet.options()
            try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: options)) { point in
                try point.register(Memo.self, as: "memos")
                try await point.transaction { transaction in
                    try transaction.upsert(Memo(id: 1, text: "kept"))
                    try transaction.upsert(Memo(id: 2, text: "removed"))
                }
                try await point.transaction { transaction in try transaction.remove(Memo.self, id: 2) }
            }
            try await DataPoint.with(storage: PostgresFleetStorage(client: client, options: options)) { point in
                try point.register(Memo.self, as: "memos")
                #expect(try point.models(Memo.self) == [Memo(id: 1, text: "kept")])
            }
        }
    }

    @Test("S17: relations and erasures on the fleet are refused typed, and the transaction commits nothing")
    func relationsRefused() async throws {
        try await Self.withTwoPoints { first, _, database in
            try await first.transaction { try $0.upsert(Memo(id: 1, text: "a")) }
            let related = await #expect(throws: RelayError.self) {
                try await first.transaction { transaction in
                    try transaction.upsert(Memo(id: 2, text: "b"))
                    try transaction.relate(Memo(id: 1, text: "a"), .owns, Memo(id: 2, text: "b"))
                }
            }
            #expect(related?.code == .invalidArgument)
            let erased = await #expect(throws: RelayError.self) {
                try await first.transaction { try $0.erase(Memo.self, id: 1) }
            }
            #expect(erased?.code == .invalidArgument)
            #expect(try first.model(Memo.self, id: 2) == nil)
            #expect(try await Fleet.count("SELECT count(*) FROM relay_models", in: database) == 1)
        }
    }
}
