import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Commits operations and document changes as one commit, in a transaction of its own or the application's
    /// (`connection`); the changes take the commit's number as their version.
    ///
    /// - Throws: As ``enqueue(_:startTimes:enqueuer:on:)`` throws.
    func enqueue(
        _ operations: [CallOperation], changes: [ModelChange], startTimes: [UUID: Date], enqueuer: UUID?,
        on connection: PostgresConnection? = nil
    ) async throws -> Enqueued {
        let body: @Sendable (PostgresConnection) async throws -> Enqueued = { connection in
            let enqueued: Enqueued
            if operations.isEmpty {
                enqueued = Enqueued(snapshot: try await number(enqueuer: enqueuer, on: connection), added: [])
            } else {
                enqueued = try await enqueue(operations, startTimes: startTimes, enqueuer: enqueuer, on: connection)
            }
            try await write(changes, version: enqueued.snapshot, on: connection)
            return enqueued
        }
        guard let connection else { return try await transaction("committing a transaction", body) }
        return try await body(connection)
    }

    /// Takes the next commit number under the counters' row lock, held until the transaction ends, and names the
    /// process that enqueues for the event log.
    func number(enqueuer: UUID?, on connection: PostgresConnection) async throws -> UInt64 {
        guard
            let number = try await rows(
                """
                UPDATE relay_counters SET snapshot = snapshot + 1
                WHERE set_config('relay.origin', coalesce(\(enqueuer)::text, ''), true) IS NOT NULL
                RETURNING snapshot
                """, on: connection
            ).first?.decode(Int64.self)
        else { throw Self.unnumbered }
        return UInt64(number)
    }

    /// Records successful outcomes and commits the changes their attempts staged, in one transaction under one
    /// commit number (S21): the changes of an outcome whose claim was lost are not written, and are the next
    /// attempt's to stage again.
    ///
    /// - Returns: The operations whose outcomes were recorded, and the changes committed, with their version.
    func finishCommitting(_ outcomes: [Outcome]) async throws -> (recorded: Set<UUID>, changes: [SharedModelChange]) {
        guard Self.allSatisfy(outcomes) else {
            throw RelayError(.invalidArgument, "only a completion or a skip commits what its attempt staged")
        }
        return try await Self.mapping("recording outcomes") {
            try await transaction("recording outcomes with their changes") { connection in
                // The counters' row first, as every commit takes it; then the function's, in the fleet's lock order.
                let version = try await number(enqueuer: nil, on: connection)
                let recorded = Set(
                    try await rows(Self.completion(of: outcomes), on: connection).map { try $0.decode(UUID.self) })
                let changes = outcomes.filter { recorded.contains($0.id) }.flatMap(\.changes)
                try await write(changes, version: version, on: connection)
                return (recorded, changes.map { SharedModelChange($0, version: version) })
            }
        }
    }

    /// Writes document changes under `version`, the last of each model's winning, and announces them.
    private func write(_ changes: [ModelChange], version: UInt64, on connection: PostgresConnection) async throws {
        guard !changes.isEmpty else { return }
        // One row per model: a statement may not change a row twice.
        var last: [Alias: Int] = [:]
        for (index, change) in changes.enumerated() {
            last[Alias(collection: change.collection, id: change.id)] = index
        }
        let kept = changes.indices.filter { last[Alias(collection: changes[$0].collection, id: changes[$0].id)] == $0 }
            .map { changes[$0] }
        let values = kept.map { ByteBuffer(bytes: $0.encoded ?? Data()) }
        _ = try await rows(
            """
            INSERT INTO relay_models (collection, id, encoded, version)
            SELECT collection, id, CASE WHEN removed THEN NULL ELSE encoded END, \(Int64(version))
            FROM unnest(
                \(kept.map(\.collection))::text[], \(kept.map(\.id))::text[],
                \(values)::bytea[], \(kept.map { $0.encoded == nil })::boolean[]
            ) AS change (collection, id, encoded, removed)
            ON CONFLICT (collection, id) DO UPDATE
            SET encoded = EXCLUDED.encoded, version = EXCLUDED.version, changed_at = now()
            """, on: connection)
        _ = try await rows("SELECT pg_notify(\(Self.modelsChannel), '')", on: connection)
    }

    /// The document, and the version up to which it holds every change, read in one snapshot of the database.
    func document() async throws -> (models: [String: [String: Data]], version: UInt64) {
        try await Self.mapping("reading the document") {
            try await transaction("reading the document") { connection in
                _ = try await rows("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", on: connection)
                var models: [String: [String: Data]] = [:]
                var version: UInt64 = 0
                for (collection, id, encoded, written) in try await rows(
                    "SELECT collection, id, encoded, version FROM relay_models", on: connection
                ).map({ try $0.decode((String, String, ByteBuffer?, Int64).self) }) {
                    version = max(version, UInt64(written))
                    if let encoded { models[collection, default: [:]][id] = Data(encoded.readableBytesView) }
                }
                return (models, version)
            }
        }
    }

    /// The document's changes after `version`, oldest first, at most `limit`: each model as it stands now, with the
    /// version of the commit that last wrote it.
    func documentChanges(after version: UInt64, limit: Int) async throws -> [SharedModelChange] {
        try await Self.mapping("reading the document's changes") {
            try await read(
                "reading the document's changes",
                """
                SELECT collection, id, encoded, version FROM relay_models WHERE version > \(Int64(version))
                ORDER BY version LIMIT \(limit)
                """
            ).map { row in
                let (collection, id, encoded, written) = try row.decode((String, String, ByteBuffer?, Int64).self)
                return SharedModelChange(
                    ModelChange(collection: collection, id: id, encoded: encoded.map { Data($0.readableBytesView) }),
                    version: UInt64(written))
            }
        }
    }

    /// Deletes the rows of removed models older than `age`: every process has heard of them by then.
    func pruneRemovedModels(olderThan age: Duration) async throws {
        _ = try await write(
            "pruning removed models",
            """
            DELETE FROM relay_models
            WHERE encoded IS NULL AND changed_at < now() - make_interval(secs => \(age.seconds))
            """)
    }
}
