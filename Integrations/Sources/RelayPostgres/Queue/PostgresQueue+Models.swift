import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Commits operations and document changes as one commit, in a transaction of its own or the application's
    /// (`connection`); the changes, checked and with their cascades (S23), take the commit's number as their version.
    ///
    /// - Returns: The commit, with the changes it made.
    /// - Throws: As ``enqueue(_:startTimes:enqueuer:on:)`` throws, and ``RelayError/Code/modelNotFound`` for a
    ///   relation that names a model the document does not hold.
    func enqueue(
        _ operations: [CallOperation], changes: [ModelChange], erasures: [Alias], startTimes: [UUID: Date],
        enqueuer: UUID?, on connection: PostgresConnection? = nil
    ) async throws -> Enqueued {
        let body: @Sendable (PostgresConnection) async throws -> Enqueued = { connection in
            var enqueued: Enqueued
            if operations.isEmpty {
                enqueued = Enqueued(snapshot: try await number(enqueuer: enqueuer, on: connection), added: [])
            } else {
                enqueued = try await enqueue(operations, startTimes: startTimes, enqueuer: enqueuer, on: connection)
            }
            enqueued.changes = try await resolve(changes, erasures: erasures, on: connection)
            try await write(enqueued.changes, version: enqueued.snapshot, on: connection)
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
                let changes = try await resolve(
                    outcomes.filter { recorded.contains($0.id) }.flatMap(\.changes), erasures: [], on: connection)
                try await write(changes, version: version, on: connection)
                return (recorded, changes.map { SharedModelChange($0, version: version) })
            }
        }
    }

    /// Checks a commit's changes against the document, and adds the removals they and `erasures` cascade to (S23),
    /// reading what they touch; the commit holds the counters' row, so no other commit changes the document meanwhile.
    private func resolve(
        _ changes: [ModelChange], erasures: [Alias], on connection: PostgresConnection
    ) async throws -> [ModelChange] {
        let demand = SharedDocumentSlice.Demand(changes: changes, erasures: erasures)
        guard !demand.isEmpty else { return changes }
        let (roots, removed, endpoints) = (
            Array(demand.ownershipRoots), Array(demand.removed), Array(demand.endpoints)
        )
        var existing: [Alias] = []
        var relations: [Relation] = []
        for (collection, id, kind, toCollection, toID) in try await rows(
            """
            WITH RECURSIVE reach (collection, id) AS (
                SELECT * FROM unnest(\(roots.map(\.collection))::text[], \(roots.map(\.id))::text[])
                UNION
                SELECT r.to_collection, r.to_id FROM relay_relations r
                JOIN reach ON r.from_collection = reach.collection AND r.from_id = reach.id
                WHERE r.kind = 'owns'
            ), named (collection, id) AS (
                SELECT collection, id FROM reach
                UNION SELECT * FROM unnest(\(removed.map(\.collection))::text[], \(removed.map(\.id))::text[])
            ), asked (collection, id) AS (
                SELECT collection, id FROM reach
                UNION SELECT * FROM unnest(\(endpoints.map(\.collection))::text[], \(endpoints.map(\.id))::text[])
            )
            SELECT r.from_collection, r.from_id, r.kind, r.to_collection, r.to_id FROM relay_relations r
            JOIN named ON r.from_collection = named.collection AND r.from_id = named.id
            UNION
            SELECT r.from_collection, r.from_id, r.kind, r.to_collection, r.to_id FROM relay_relations r
            JOIN named ON r.to_collection = named.collection AND r.to_id = named.id
            UNION ALL
            SELECT m.collection, m.id, NULL, NULL, NULL FROM relay_models m
            JOIN asked ON m.collection = asked.collection AND m.id = asked.id
            WHERE m.encoded IS NOT NULL
            """, on: connection
        ).map({ try $0.decode((String, String, String?, String?, String?).self) }) {
            let from = Alias(collection: collection, id: id)
            guard let kind, let toCollection, let toID else {
                existing.append(from)
                continue
            }
            guard let relationship = Relationship(rawValue: kind) else { continue }
            relations.append(Relation(from, relationship, Alias(collection: toCollection, id: toID)))
        }
        return try SharedDocumentSlice(existing: existing, relations: relations).resolve(changes, erasures: erasures)
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
        try await index(kept.filter { $0.relation != nil }, on: connection)
        _ = try await rows("SELECT pg_notify(\(Self.modelsChannel), '')", on: connection)
    }

    /// Keeps `relay_relations` in step with the relations that `changes` set and remove, one change per relation.
    private func index(_ changes: [ModelChange], on connection: PostgresConnection) async throws {
        guard !changes.isEmpty else { return }
        let removed = changes.filter { $0.encoded == nil }.map(\.id)
        if !removed.isEmpty {
            _ = try await rows("DELETE FROM relay_relations WHERE id = ANY(\(removed)::text[])", on: connection)
        }
        let set = changes.filter { $0.encoded != nil }
        let relations = set.compactMap(\.relation)
        guard !relations.isEmpty else { return }
        _ = try await rows(
            """
            INSERT INTO relay_relations (id, kind, from_collection, from_id, to_collection, to_id)
            SELECT * FROM unnest(
                \(set.map(\.id))::text[], \(relations.map(\.kind.rawValue))::text[],
                \(relations.map(\.from.collection))::text[], \(relations.map(\.from.id))::text[],
                \(relations.map(\.to.collection))::text[], \(relations.map(\.to.id))::text[])
            ON CONFLICT (id) DO NOTHING
            """, on: connection)
    }

    /// The whole document, removals still kept included, each row with the version of the commit that last wrote it,
    /// and the version up to which it holds every change (removals pruned through a later one included), read in one
    /// snapshot of the database.
    ///
    /// - Parameter deadline: How long it may take, the queue's deadline unless given.
    /// - Returns: The rows, and the version.
    /// - Throws: ``RelayError/Code/storageFailure``.
    func document(within deadline: Duration? = nil) async throws -> (rows: [SharedModelChange], version: UInt64) {
        try await Self.mapping("reading the document") {
            try await transaction("reading the document", within: deadline) { connection in
                _ = try await rows("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", on: connection)
                var document: [SharedModelChange] = []
                var version: UInt64 = 0
                for (collection, id, encoded, written) in try await rows(
                    "SELECT collection, id, encoded, version FROM relay_models", on: connection
                ).map({ try $0.decode((String, String, ByteBuffer?, Int64).self) }) {
                    version = max(version, UInt64(written))
                    document.append(Self.change(collection, id, encoded, version: written))
                }
                // Removals pruned through a later commit are in this reading too: they are absent from it.
                for pruned in try await rows("SELECT pruned_through FROM relay_model_horizon", on: connection)
                    .map({ try $0.decode(Int64.self) })
                {
                    version = max(version, UInt64(pruned))
                }
                return (document, version)
            }
        }
    }

    /// A place among the document's rows, in the order a follower reads them: every row of an earlier version is
    /// behind it, and of `version` itself every row when `collection` and `id` are `nil`, or those up to them.
    struct DocumentCursor: Sendable, Hashable {
        var version: UInt64
        var collection: String?
        var id: String?

        /// After every row of `version` and before.
        init(through version: UInt64) {
            self.version = version
        }

        /// The version through which every row is behind the cursor.
        var through: UInt64 { collection == nil ? version : version - 1 }
    }

    /// The document's changes after `cursor`, oldest first, at most `limit`, each model as it stands now with the
    /// version of the commit that last wrote it; where the next read starts; and, read with them, the version up to
    /// which removals were pruned.
    ///
    /// Commits become visible in the order of their numbers (they take them under the counters' row lock, held until
    /// they end), so a read that is not full has every change through the last version it saw.
    func documentChanges(
        after cursor: DocumentCursor, limit: Int
    ) async throws -> (changes: [SharedModelChange], cursor: DocumentCursor, prunedThrough: UInt64) {
        try await Self.mapping("reading the document's changes") {
            var changes: [SharedModelChange] = []
            var prunedThrough: UInt64 = 0
            var next = cursor
            for row in try await read(
                "reading the document's changes",
                """
                SELECT h.pruned_through, m.collection, m.id, m.encoded, m.version FROM relay_model_horizon h
                LEFT JOIN LATERAL (
                    SELECT collection, id, encoded, version FROM relay_models
                    WHERE version > \(Int64(cursor.version)) OR (
                        version = \(Int64(cursor.version))
                        AND (collection, id) > (\(cursor.collection)::text, \(cursor.id)::text))
                    ORDER BY version, collection, id LIMIT \(limit)
                ) m ON true
                """
            ) {
                let (pruned, collection, id, encoded, written) = try row.decode(
                    (Int64, String?, String?, ByteBuffer?, Int64?).self)
                prunedThrough = UInt64(pruned)
                guard let collection, let id, let written else { continue }
                changes.append(Self.change(collection, id, encoded, version: written))
                next = DocumentCursor(through: UInt64(written))
                (next.collection, next.id) = (collection, id)
            }
            // A read that is not full has read every row of the versions it saw.
            if changes.count < limit { next = DocumentCursor(through: next.version) }
            return (changes, next, prunedThrough)
        }
    }

    /// A row of `relay_models` as a change of the document.
    private static func change(
        _ collection: String, _ id: String, _ encoded: ByteBuffer?, version: Int64
    ) -> SharedModelChange {
        SharedModelChange(
            ModelChange(collection: collection, id: id, encoded: encoded.map { Data($0.readableBytesView) }),
            version: UInt64(version))
    }

    /// Deletes the rows of removed models older than `age`, by which time every process in touch has heard of them,
    /// and moves the horizon past them: a process behind it reads the whole document again.
    func pruneRemovedModels(olderThan age: Duration) async throws {
        _ = try await write(
            "pruning removed models",
            """
            WITH pruned AS (
                DELETE FROM relay_models
                WHERE encoded IS NULL AND changed_at < now() - make_interval(secs => \(age.seconds))
                RETURNING version
            )
            UPDATE relay_model_horizon
            SET pruned_through = GREATEST(pruned_through, (SELECT max(version) FROM pruned))
            WHERE EXISTS (SELECT 1 FROM pruned)
            """)
    }
}
