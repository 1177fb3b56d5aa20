import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// A page of stored operations, and those of them that a process runs now.
    typealias StoredPage = (operations: [StoredOperation], running: Set<UUID>, next: OperationPage.Cursor?)

    /// The stored operations that `query` selects, oldest commit first, one page, read in one snapshot of the
    /// database while the fleet runs: what a tool such as the `relay` command lists.
    func storedOperations(_ query: OperationQuery) async throws -> StoredPage {
        try await Self.mapping("reading the store") {
            try await page(query, "reading the store", empty: ([], [], nil)) { ids, next, connection in
                let found = try await Self.stored(
                    from: rows(
                        "SELECT \(unescaped: Self.storedColumns) WHERE id = ANY(\(ids)) ORDER BY snapshot, ordinal",
                        on: connection))
                return (found.operations, found.running, next)
            }
        }
    }

    /// The stored operations whose id, in lowercase with its hyphens, starts with `prefix`, oldest commit first, at
    /// most `limit`: how a person names an operation.
    func storedOperations(
        withIDPrefix prefix: String, limit: Int
    ) async throws -> (operations: [StoredOperation], running: Set<UUID>) {
        guard limit >= 1 else {
            throw RelayError(.invalidArgument, "a page holds at least one operation; the limit was \(limit)")
        }
        guard let (lowest, highest) = Self.ids(startingWith: prefix) else { return ([], []) }
        return try await Self.mapping("reading the store") {
            let found = try await read("reading the store", "SELECT to_regclass('relay_operations') IS NOT NULL")
            guard try found.first?.decode(Bool.self) == true else { return ([], []) }
            return try await Self.stored(
                from: read(
                    "reading the store",
                    """
                    SELECT \(unescaped: Self.storedColumns) WHERE id BETWEEN \(lowest) AND \(highest)
                    ORDER BY snapshot, ordinal LIMIT \(limit)
                    """))
        }
    }

    /// The lowest and the highest id whose text starts with `prefix`, or `nil` when none can.
    ///
    /// The database orders ids as their text orders them, so that the ids of a prefix are one range of its primary
    /// key, which it reads without looking at every id.
    static func ids(startingWith prefix: String) -> (UUID, UUID)? {
        let template = Array("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
        let typed = Array(prefix)
        guard !typed.isEmpty, typed.count <= template.count else { return nil }
        for (character, expected) in zip(typed, template) {
            let fits = expected == "-" ? character == "-" : character.isHexDigit && !character.isUppercase
            guard fits else { return nil }
        }
        let rest = template.dropFirst(typed.count)
        let lowest = String(typed + rest.map { $0 == "-" ? "-" : "0" })
        let highest = String(typed + rest.map { $0 == "-" ? "-" : "f" })
        guard let low = UUID(uuidString: lowest), let high = UUID(uuidString: highest) else { return nil }
        return (low, high)
    }

    /// What a stored operation is built from, with `FROM`: a statement adds its `WHERE`.
    private static let storedColumns = """
        body, snapshot, attempts, enqueued_at, started_at, finished_at, state, CASE WHEN state >= 3 THEN result END,
            CASE WHEN state = 1 AND attempts > 0 AND available_at > now() THEN available_at END,
            CASE WHEN held_until > now() THEN held_until END
        FROM relay_operations
        """

    /// The stored operations that rows of ``storedColumns`` describe, and those of them that run.
    private static func stored(
        from rows: [PostgresRow]
    ) throws -> (operations: [StoredOperation], running: Set<UUID>) {
        var operations: [StoredOperation] = []
        var running: Set<UUID> = []
        for row in rows {
            let (body, snapshot, attempts, enqueuedAt, startedAt, finishedAt, state, result, retryAt, held) =
                try row.decode((ByteBuffer, Int64, Int32, Date, Date?, Date?, Int16, ByteBuffer?, Date?, Date?).self)
            let operation = try CallOperation(encoded: Data(body.readableBytesView))
            guard let phase = PostgresOperationState(rawValue: state) else {
                throw RelayError(.corruptStore, "operation \(operation.id) has state \(state), which no Relay writes")
            }
            if phase == .running { running.insert(operation.id) }
            operations.append(
                StoredOperation(
                    operation: operation, snapshot: UInt64(snapshot), attempts: Int(attempts), enqueuedAt: enqueuedAt,
                    firstStartedAt: startedAt,
                    result: try result.map { try CallResult(encoded: Data($0.readableBytesView)) },
                    finishedAt: finishedAt, retryAt: retryAt, holds: held.map { [nil: $0] } ?? [:]))
        }
        return (operations, running)
    }
}

extension PostgresQueue {
    /// How many operations the database holds in each state, of `sequence` when given.
    ///
    /// States with none are left out. A database that Relay has not set up holds none, which this says without
    /// creating anything.
    func operationCounts(sequence: CallSequence.Name?) async throws -> [OperationQuery.State: Int] {
        let name = sequence?.rawValue
        return try await Self.mapping("counting operations") {
            let found = try await read("counting operations", "SELECT to_regclass('relay_operations') IS NOT NULL")
            guard try found.first?.decode(Bool.self) == true else { return [:] }
            var counts: [OperationQuery.State: Int] = [:]
            for row in try await read(
                "counting operations",
                """
                SELECT state, count(*) FROM relay_operations
                WHERE \(name)::text IS NULL OR sequence = \(name)::text GROUP BY state
                """)
            {
                let (state, count) = try row.decode((Int16, Int64).self)
                guard let phase = PostgresOperationState(rawValue: state) else {
                    throw RelayError(.corruptStore, "\(count) operations have state \(state), which no Relay writes")
                }
                counts[phase.queryState, default: 0] += Int(count)
            }
            return counts
        }
    }
}
