import Foundation
import PostgresNIO
import Relay
import RelayTesting
import Testing

@testable import RelayPostgres

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

    /// Options of a process that hears of no other process's commit while a test runs: it neither listens nor polls.
    static func deaf() -> PostgresFleetStorage.Options {
        var options = Fleet.options()
        options.listens = false
        options.pollInterval = .seconds(600)
        return options
    }

    /// Runs `body` with DataPoints of two processes on one new database, each on a client of its own, both with
    /// `Memo` registered as `memos`.
    static func withTwoPoints<Result: Sendable>(
        first: PostgresFleetStorage.Options = Fleet.options(), second: PostgresFleetStorage.Options = Fleet.options(),
        _ body: @Sendable (DataPoint, DataPoint, String) async throws -> Result
    ) async throws -> Result {
        try await TestDatabase.with { client, database in
            try await TestDatabase.withClient(database: database) { other in
                try await DataPoint.with(
                    storage: PostgresFleetStorage(client: client, options: first),
                    executors: [Fleet.work: Fleet.runner("A")]
                ) { first in
                    try first.register(Memo.self, as: "memos")
                    try await first.upsertCallSequence(CallSequence(name: Fleet.left, bunchSize: 4))
                    return try await DataPoint.with(
                        storage: PostgresFleetStorage(client: other, options: second)
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

    @Test("S20/S29: a commit of more rows than the follower reads at once reaches the other process whole")
    func largeCommitReachesEveryProcess() async throws {
        try await Self.withTwoPoints { first, second, database in
            let heard = try second.changes(of: Memo.self, bufferSize: 4096)
            try await first.transaction { transaction in
                for id in 0..<2500 { try transaction.upsert(Memo(id: id, text: "memo \(id)")) }
            }
            try await first.transaction { try $0.upsert(Memo(id: 9999, text: "after")) }
            let latest = try await Self.latest(in: database)
            var count = 0
            for await event in heard where event.kind.change != nil {
                count += 1
                if event.kind.change?.snapshot == latest { break }
            }
            #expect(count == 2501)
            #expect(try second.models(Memo.self).count == 2501)
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

    @Test("S21/S29: an attempt's staged models and relations commit with its completion and reach every process")
    func stagedModelsCommitWithCompletion() async throws {
        try await TestDatabase.with { client, database in
            let staging = CallKind(rawValue: "staging")
            let executor = ClosureExecutor { operation, context in
                let text = String(decoding: operation.payload, as: UTF8.self)
                try context.stage { transaction in
                    try transaction.upsert(Memo(id: 7, text: "draft"))
                    try transaction.upsert(Memo(id: 7, text: text))
                    if text == "related" {
                        try transaction.upsert(Memo(id: 8, text: text))
                        try transaction.relate(Memo(id: 7, text: text), .owns, Memo(id: 8, text: text))
                    }
                }
                return .completed(Data("done".utf8))
            }
            try await TestDatabase.withClient(database: database) { other in
                try await DataPoint.with(
                    storage: PostgresFleetStorage(client: client, options: Fleet.options()),
                    executors: [staging: executor]
                ) { point in
                    try point.register(Memo.self, as: "memos")
                    try await point.upsertCallSequence(CallSequence(name: Fleet.left, bunchSize: 1))
                    try await DataPoint.with(
                        storage: PostgresFleetStorage(client: other, options: Fleet.options())
                    ) { reader in
                        try reader.register(Memo.self, as: "memos")
                        let heard = try reader.changes(of: Memo.self)
                        let operation = CallOperation(
                            kind: staging, sequenceName: Fleet.left, payload: Data("final".utf8))
                        #expect(try await point.execute(operation) == Data("done".utf8))
                        // Read as the handle settles, in the process that ran it; the last change of the model won.
                        #expect(try point.model(Memo.self, id: 7) == Memo(id: 7, text: "final"))
                        let version = UInt64(
                            try await Fleet.count("SELECT version FROM relay_models WHERE id = '7'", in: database))
                        #expect(
                            try await Self.change(in: heard, atLeast: version)?.model(as: Memo.self)?.text == "final")
                        #expect(try reader.model(Memo.self, id: 7) == Memo(id: 7, text: "final"))

                        // A staged relation commits with its models, decided by the database, and reaches both.
                        let related = CallOperation(
                            kind: staging, sequenceName: Fleet.left, payload: Data("related".utf8))
                        #expect(try await point.execute(related) == Data("done".utf8))
                        let (owner, owned) = (Memo(id: 7, text: "related"), Memo(id: 8, text: "related"))
                        #expect(try point.related(to: owner, by: .owns, as: Memo.self) == [owned])
                        _ = await Self.change(in: heard, atLeast: try await Self.latest(in: database))
                        #expect(try reader.related(to: owned, by: .ownedBy, as: Memo.self) == [owner])
                    }
                }
            }
            #expect(
                try await Fleet.count("SELECT count(*) FROM relay_models WHERE collection = 'memos'", in: database) == 2
            )
            #expect(try await Fleet.count("SELECT count(*) FROM relay_relations", in: database) == 1)
        }
    }

    @Test("S21/S27: a completion commits its staged changes under a number of its own; a lost claim commits none")
    func stagedChangesFenced() async throws {
        try await PostgresQueueTests.withQueue { queue, database in
            try await queue.configure(Fleet.left, bunchSize: 2, algorithm: .flat)
            let operations = [CallOperation(kind: Fleet.work, sequenceName: Fleet.left)]
            let snapshot = try await queue.enqueue(operations).snapshot
            let owner = UUID()
            _ = try await queue.claim(.init(owner: owner, limit: 1, lease: .seconds(30)))
            let memo = ModelChange(collection: "memos", id: "1", encoded: Data("kept".utf8))
            let lost = try await queue.finishCommitting([
                .init(id: operations[0].id, owner: UUID(), attempt: 1, result: .completed(Data()), changes: [memo])
            ])
            #expect(lost.recorded.isEmpty && lost.changes.isEmpty)
            #expect(try await Fleet.count("SELECT count(*) FROM relay_models", in: database) == 0)

            let kept = try await queue.finishCommitting([
                .init(id: operations[0].id, owner: owner, attempt: 1, result: .completed(Data()), changes: [memo])
            ])
            #expect(kept.recorded == [operations[0].id])
            #expect(kept.changes.map(\.change) == [memo] && kept.changes.allSatisfy { $0.version > snapshot })
            #expect(
                try await Fleet.count("SELECT count(*) FROM relay_models WHERE encoded = 'kept'", in: database) == 1)
            #expect(try await Fleet.count("SELECT count(*) FROM relay_operations WHERE state = 3", in: database) == 1)
            let failed = await #expect(throws: RelayError.self) {
                try await queue.finishCommitting([
                    .init(
                        id: operations[0].id, owner: owner, attempt: 1, result: .cancelled(.requested), changes: [memo])
                ])
            }
            #expect(failed?.code == .invalidArgument)
        }
    }

    @Test("S29/S31: a process that missed removals the fleet has pruned reads the whole document again, and drops them")
    func reloadAfterPrunedRemovals() async throws {
        try await TestDatabase.with { client, database in
            try await TestDatabase.withClient(database: database) { other in
                let store = PostgresFleetStorage(client: client, options: Self.deaf())
                try await DataPoint.with(storage: store) { deaf in
                    try deaf.register(Memo.self, as: "memos")
                    try await DataPoint.with(
                        storage: PostgresFleetStorage(client: other, options: Fleet.options())
                    ) { writer in
                        try writer.register(Memo.self, as: "memos")
                        try await deaf.transaction { transaction in
                            try transaction.upsert(Memo(id: 1, text: "kept"))
                            try transaction.upsert(Memo(id: 2, text: "removed"))
                        }
                        try await writer.transaction { transaction in
                            try transaction.remove(Memo.self, id: 2)
                            try transaction.upsert(Memo(id: 1, text: "changed"))
                        }
                        // Pruned before the deaf process read it, as after a cut longer than the log keeps removals.
                        try await PostgresQueue(client: other, logger: TestDatabase.logger)
                            .pruneRemovedModels(olderThan: .zero)
                        #expect(try await Fleet.count("SELECT count(*) FROM relay_models", in: database) == 1)
                        #expect(try deaf.model(Memo.self, id: 2) != nil, "it has heard of nothing yet")
                        let heard = try deaf.changes(of: Memo.self)
                        let link = try #require(store.running.withLock { $0?.link })
                        try await store.catchUpDocument(for: link)
                        #expect(try deaf.model(Memo.self, id: 2) == nil)
                        #expect(try deaf.model(Memo.self, id: 1) == Memo(id: 1, text: "changed"))
                        var changes: [Int: Bool] = [:]
                        for await event in heard {
                            guard let change = event.kind.change else { continue }
                            changes[Int(change.id) ?? 0] = change.isRemoval
                            if changes.count == 2 { break }
                        }
                        #expect(changes == [1: false, 2: true], "change streams hear of both")
                        // Read again, the document is current: nothing more to reload.
                        let cursor = store.documentCursor.withLock { $0 }
                        try await store.catchUpDocument(for: link)
                        #expect(store.documentCursor.withLock { $0 } == cursor)
                    }
                }
            }
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

    /// The largest version the fleet's document holds.
    static func latest(in database: String) async throws -> UInt64 {
        UInt64(try await Fleet.count("SELECT max(version) FROM relay_models", in: database))
    }

    @Test("S23/S29: relations commit fleet-wide, checked against the database's document, and resolve everywhere")
    func relationsAcrossProcesses() async throws {
        try await Self.withTwoPoints(second: Self.deaf()) { first, second, database in
            let (order, line) = (Memo(id: 1, text: "order"), Memo(id: 2, text: "line"))
            let firstHeard = try first.changes(of: Memo.self)
            try await first.transaction { try $0.upsert(order) }
            // The second relates a model the first committed, which it has not heard of: the database holds it.
            try await second.transaction { transaction in
                try transaction.upsert(line)
                try transaction.relate(order, .owns, line)
            }
            #expect(try second.related(to: order, by: .owns, as: Memo.self) == [line])
            _ = await Self.change(in: firstHeard, atLeast: try await Self.latest(in: database))
            #expect(try first.related(to: line, by: .ownedBy, as: Memo.self) == [order])

            // A relation that names a model no process holds is refused, and nothing of its transaction commits.
            let refused = await #expect(throws: RelayError.self) {
                try await first.transaction { transaction in
                    try transaction.upsert(Memo(id: 3, text: "unrelated"))
                    try transaction.relate(Memo(id: 3, text: "unrelated"), .free, Memo(id: 9, text: "never stored"))
                }
            }
            #expect(refused?.code == .modelNotFound)
            #expect(try first.model(Memo.self, id: 3) == nil)
            #expect(try await Fleet.count("SELECT count(*) FROM relay_models WHERE id = '3'", in: database) == 0)

            // Removing a model in one process removes the relations that another made.
            try await first.transaction { try $0.remove(Memo.self, id: 2) }
            #expect(try await Fleet.count("SELECT count(*) FROM relay_relations", in: database) == 0)
            #expect(try first.related(to: order, by: .owns, as: Memo.self).isEmpty)
        }
    }

    @Test("S23/S29: an erasure cascades over the database's document, and a living owner another process gave keeps")
    func erasureAcrossProcesses() async throws {
        try await Self.withTwoPoints(first: Self.deaf()) { first, second, database in
            let order = Memo(id: 1, text: "order")
            let (line, shared, keeper) = (
                Memo(id: 2, text: "line"), Memo(id: 3, text: "shared"), Memo(id: 4, text: "keeper")
            )
            let secondHeard = try second.changes(of: Memo.self)
            try await first.transaction { transaction in
                for memo in [order, line, shared, keeper] { try transaction.upsert(memo) }
                try transaction.relate(order, .owns, line)
                try transaction.relate(order, .owns, shared)
            }
            try await second.transaction { transaction in try transaction.relate(keeper, .owns, shared) }
            // The first has not heard of the second's relation: the database decides with it all the same.
            try await first.transaction { transaction in try transaction.erase(order) }
            #expect(try first.model(Memo.self, id: 1) == nil && first.model(Memo.self, id: 2) == nil)
            #expect(try first.model(Memo.self, id: 3) == shared, "kept by the owner the second process gave it")
            #expect(
                try await Fleet.count(
                    "SELECT count(*) FROM relay_models WHERE collection = 'memos' AND encoded IS NOT NULL", in: database
                )
                    == 2)
            #expect(try await Fleet.count("SELECT count(*) FROM relay_relations", in: database) == 1)
            _ = await Self.change(in: secondHeard, atLeast: try await Self.latest(in: database))
            #expect(try second.models(Memo.self).map(\.id).sorted() == [3, 4])
            #expect(try second.related(to: shared, by: .ownedBy, as: Memo.self) == [keeper])
        }
    }
}
