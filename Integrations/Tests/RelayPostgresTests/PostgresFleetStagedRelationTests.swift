import Foundation
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// Relations that an attempt stages, on a fleet: the database decides them when the attempt ends, not the copy of the
/// document that the process running it holds, which may lag.
@Suite(
    "S23 staged relations on a fleet", .timeLimit(.minutes(2)),
    .enabled(if: TestDatabase.isAvailable, "RELAY_POSTGRES_URL names no PostgreSQL server"))
struct PostgresFleetStagedRelationTests {
    private typealias Fleet = PostgresFleetTests
    private typealias Memo = PostgresFleetDocumentTests.Memo

    private static let relating = CallKind(rawValue: "relating")

    /// Stages a line, `Memo(id: payload)`, owned by the order `Memo(id: 1)`.
    private static let executor = ClosureExecutor { operation, context in
        let id = Int(String(decoding: operation.payload, as: UTF8.self)) ?? 0
        try context.stage { transaction in
            let line = Memo(id: id, text: "line")
            try transaction.upsert(line)
            try transaction.relate(Memo(id: 1, text: "order"), .owns, line)
        }
        return .completed(Data("related".utf8))
    }

    /// Runs `body` with two processes' DataPoints on one new database: one that hears of the other's commits, and
    /// one that never does (no LISTEN, a poll far off) and runs the `relating` operations.
    private static func withProcesses(
        _ body: @Sendable (_ hearing: DataPoint, _ deaf: DataPoint, _ database: String) async throws -> Void
    ) async throws {
        try await TestDatabase.with { client, database in
            try await TestDatabase.withClient(database: database) { other in
                try await DataPoint.with(
                    storage: PostgresFleetStorage(client: client, options: PostgresFleetDocumentTests.deaf()),
                    executors: [relating: executor]
                ) { deaf in
                    try deaf.register(Memo.self, as: "memos")
                    try await deaf.upsertCallSequence(CallSequence(name: Fleet.left, bunchSize: 1))
                    try await DataPoint.with(
                        storage: PostgresFleetStorage(client: other, options: Fleet.options())
                    ) { hearing in
                        try hearing.register(Memo.self, as: "memos")
                        try await body(hearing, deaf, database)
                    }
                }
            }
        }
    }

    private static func relate(line id: Int) -> CallOperation {
        CallOperation(kind: relating, sequenceName: Fleet.left, payload: Data("\(id)".utf8))
    }

    @Test("S21/S23: a staged relation to a model that another process added, unheard of here, commits")
    func addedElsewhere() async throws {
        try await Self.withProcesses { hearing, deaf, database in
            let heard = try hearing.changes(of: Memo.self)
            try await hearing.transaction { try $0.upsert(Memo(id: 1, text: "order")) }
            #expect(try deaf.model(Memo.self, id: 1) == nil, "the running process has not heard of the order")
            #expect(try await deaf.execute(Self.relate(line: 2)) == Data("related".utf8))
            #expect(try await Fleet.count("SELECT count(*) FROM relay_relations", in: database) == 1)
            // The line reached the running process's document with its outcome, and the other process's as well.
            #expect(try deaf.model(Memo.self, id: 2) == Memo(id: 2, text: "line"))
            _ = await PostgresFleetDocumentTests.change(
                in: heard, atLeast: try await PostgresFleetDocumentTests.latest(in: database))
            #expect(
                try hearing.related(to: Memo(id: 1, text: "order"), by: .owns, as: Memo.self)
                    == [Memo(id: 2, text: "line")])
        }
    }

    @Test("S21/S23: a staged relation to a model that another process removed, unheard of here, fails the operation")
    func removedElsewhere() async throws {
        try await Self.withProcesses { hearing, deaf, database in
            // The running process adds the order itself, so its own document holds it; then the other removes it.
            try await deaf.transaction { try $0.upsert(Memo(id: 1, text: "order")) }
            try await hearing.transaction { try $0.remove(Memo.self, id: 1) }
            #expect(try deaf.model(Memo.self, id: 1) != nil, "the running process has not heard of the removal")
            let events = deaf.events()
            let handle = try await deaf.enqueue(Self.relate(line: 3))
            guard case .failed(let failure) = try await handle.outcome else {
                Issue.record("a relation to a removed model was committed")
                return
            }
            #expect(failure.reason.contains("its staged changes cannot be committed"), "\(failure.reason)")
            // Nothing the attempt staged was written, and the database holds the failure.
            let line: Memo? = try deaf.model(Memo.self, id: 3)
            #expect(line == nil)
            #expect(try await Fleet.count("SELECT count(*) FROM relay_models WHERE id = '3'", in: database) == 0)
            #expect(try await Fleet.count("SELECT count(*) FROM relay_relations", in: database) == 0)
            guard case .finished(.failed)? = try await hearing.status(of: handle.id)?.state else {
                Issue.record("the database does not hold the failure")
                return
            }
            // The process that ran it announces the failure.
            var end: CallEvent.Kind?
            for await event in events where event.operationID == handle.id && event.kind.isTerminal {
                end = event.kind
                break
            }
            #expect(end?.failure?.reason == failure.reason, "\(String(describing: end))")
        }
    }
}
