import Benchmark
import Foundation
import GRDB
import Measuring
import Relay

/// P9: durable transactions of one model upsert and one enqueued operation (a transactional outbox), from 64
/// concurrent tasks, each awaiting its own commit.
///
/// Relay commits them to a file store under group commit, with the store's default fsync; its outbox sequence is
/// suspended, so the operations stay queued as an outbox's rows do. Beside it, GRDB on SQLite in WAL mode with
/// `synchronous = FULL`: each transaction upserts the model's row and inserts an outbox row.
func outboxBenchmarks() {
    let tasks = 64
    let configuration = Benchmark.Configuration(
        metrics: [operationsPerSecond], warmupIterations: 1, maxDuration: .seconds(30), maxIterations: 10)
    let relayCount = tasks * 500
    Benchmark(
        "P9 Relay durable transactions with an operation tasks=\(tasks) n=\(relayCount)", configuration: configuration
    ) {
        benchmark in
        try await benchmark.measureRate(count: relayCount) {
            let folder = temporaryFolder("p9-relay")
            defer { try? FileManager.default.removeItem(at: folder) }
            return try await DataPoint.with(storage: .file(at: folder)) { point in
                try point.register(Item.self, as: "items")
                point.register(OutboxExecutor(), for: outboxKind)
                let outbox = CallSequence.Name("outbox")
                _ = try await point.upsertCallSequence(CallSequence(name: outbox, bunchSize: 1)).suspend()
                return try await timed {
                    try await inTasks(tasks, each: relayCount / tasks) { id in
                        try await point.transaction { tx in
                            try tx.upsert(item(id))
                            tx.enqueue(
                                CallOperation(kind: outboxKind, sequenceName: outbox, payload: Data("\(id)".utf8)))
                        }
                    }
                }
            }
        }
    }
    let grdbCount = tasks * 40
    Benchmark("P9 GRDB WAL synchronous FULL transactions tasks=\(tasks) n=\(grdbCount)", configuration: configuration) {
        benchmark in
        try await benchmark.measureRate(count: grdbCount) {
            let folder = temporaryFolder("p9-grdb")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let database = try outboxDatabase(at: folder)
            let encoder = JSONEncoder()
            return try await timed {
                try await inTasks(tasks, each: grdbCount / tasks) { id in
                    let encoded = try encoder.encode(item(id))
                    try await database.write { db in
                        try db.execute(
                            sql: """
                                INSERT INTO items (id, body) VALUES (?, ?)
                                ON CONFLICT (id) DO UPDATE SET body = excluded.body
                                """,
                            arguments: ["\(id)", encoded])
                        try db.execute(
                            sql: "INSERT INTO outbox (id, kind, payload) VALUES (?, ?, ?)",
                            arguments: [UUID().uuidString, "outbox", Data("\(id)".utf8)])
                    }
                }
            }
        }
    }
}

private let outboxKind: CallKind = "outbox"

/// Never runs: the outbox sequence stays suspended.
private struct OutboxExecutor: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome { .completed(Data()) }
}

/// A database in WAL mode with `synchronous = FULL`, with an items table and an outbox table.
func outboxDatabase(at folder: URL) throws -> DatabasePool {
    var configuration = Configuration()
    configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
    let database = try DatabasePool(path: folder.appendingPathComponent("db.sqlite").path, configuration: configuration)
    try database.write { db in
        try db.execute(sql: "CREATE TABLE items (id TEXT PRIMARY KEY NOT NULL, body BLOB NOT NULL)")
        try db.execute(sql: "CREATE TABLE outbox (id TEXT PRIMARY KEY NOT NULL, kind TEXT NOT NULL, payload BLOB)")
    }
    return database
}

/// Runs `body` for `each` ids in each of `count` concurrent tasks; the ids are distinct across tasks.
func inTasks(_ count: Int, each: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for task in 0..<count {
            group.addTask { for id in task * each..<(task + 1) * each { try await body(id) } }
        }
        try await group.waitForAll()
    }
}

func temporaryFolder(_ name: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("relay-benchmark-\(name)-\(UUID().uuidString)")
}
