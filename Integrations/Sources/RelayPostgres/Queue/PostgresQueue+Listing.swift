import Foundation
import NIOCore
import PostgresNIO
import Relay

/// Statuses read from the database: of one operation, and listings of the whole fleet's.
extension PostgresQueue {
    /// Where operation `id` stands as the database holds it, or `nil` when it is not stored.
    ///
    /// A waiting one says why as far as the database tells: its dependencies, its start time or holds, an earlier
    /// commit of a commit-graph sequence, a suspension, or a sequence no process has registered. The database keeps no
    /// attempt's run time nor its failure before a retry: those are in the status that the process running it reads.
    func status(of id: UUID) async throws -> CallStatus? {
        try await Self.mapping("reading the status of operation \(id)") {
            let rows = try await read(
                "reading the status of operation \(id)",
                "SELECT \(unescaped: Self.statusColumns) WHERE o.id = \(id)")
            return try rows.first.map(Self.status(from:))
        }
    }

    /// The operations that `query` selects, oldest commit first, one page, read in one snapshot of the database.
    ///
    /// States and sequences are selected in SQL; the kind lives in the operation's encoded body, so a query of a kind
    /// reads bodies in growing chunks and keeps the matching ones. Each chunk sorts what follows the cursor: a tool's
    /// query, not a hot path.
    func operations(_ query: OperationQuery) async throws -> OperationPage {
        try await page(query, "listing operations", empty: OperationPage(statuses: [], next: nil)) {
            ids, next, connection in
            let statuses = try await rows(
                """
                SELECT \(unescaped: Self.statusColumns) WHERE o.id = ANY(\(ids))
                ORDER BY o.snapshot, o.ordinal
                """, on: connection
            ).map(Self.status(from:))
            return OperationPage(statuses: statuses, next: next)
        }
    }

    /// Reads the ids of the page that `query` selects in one snapshot of the database, then what `body` reads of them
    /// in the same snapshot; `empty` when Relay has not set the database up.
    func page<Page: Sendable>(
        _ query: OperationQuery, _ what: String, empty: Page,
        body: @escaping @Sendable ([UUID], OperationPage.Cursor?, PostgresConnection) async throws -> Page
    ) async throws -> Page {
        guard query.limit >= 1 else {
            throw RelayError(.invalidArgument, "a page holds at least one operation; the limit was \(query.limit)")
        }
        let states = query.states.flatMap(\.storedStates).map(\.rawValue)
        let sequence = query.sequence?.rawValue
        let kind = query.kind
        return try await transaction(what) { connection in
            _ = try await rows("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", on: connection)
            let found = try await rows("SELECT to_regclass('relay_operations') IS NOT NULL", on: connection)
            guard try found.first?.decode(Bool.self) == true else { return empty }
            var selected: [(id: UUID, next: OperationPage.Cursor)] = []
            var after = query.after ?? OperationPage.Cursor(order: 0)
            var chunk = kind == nil ? query.limit + 1 : max(query.limit + 1, 256)
            while selected.count <= query.limit {
                let scanned = try await rows(
                    """
                    SELECT id, snapshot, ordinal, CASE WHEN \(kind != nil)::boolean THEN body END FROM relay_operations
                    WHERE (snapshot, ordinal) > (\(Int64(clamping: after.order)), \(Int32(clamping: after.suborder)))
                        AND (cardinality(\(states)::smallint[]) = 0 OR state = ANY(\(states)::smallint[]))
                        AND (\(sequence)::text IS NULL OR sequence = \(sequence)::text)
                    ORDER BY snapshot, ordinal LIMIT \(chunk)
                    """, on: connection)
                for (id, snapshot, ordinal, body) in try scanned.map({
                    try $0.decode((UUID, Int64, Int32, ByteBuffer?).self)
                }) {
                    after = OperationPage.Cursor(order: UInt64(snapshot), suborder: UInt64(ordinal))
                    if let kind, let body, try CallOperation(encoded: Data(body.readableBytesView)).kind != kind {
                        continue
                    }
                    selected.append((id, after))
                }
                if scanned.count < chunk { break }
                chunk = min(chunk * 4, 65_536)
            }
            let page = selected.prefix(query.limit)
            return try await body(page.map(\.id), selected.count > query.limit ? page.last?.next : nil, connection)
        }
    }

    /// What a status is built from, with `FROM`: a statement adds its `WHERE`.
    private static let statusColumns = """
        o.id, o.sequence, o.snapshot, o.state, o.blockers, o.attempts,
            greatest(o.available_at, o.held_until) > now(), greatest(o.available_at, o.held_until),
            o.enqueued_at, o.started_at, o.finished_at, CASE WHEN o.state >= 3 THEN o.result END,
            s.name IS NOT NULL, coalesce(s.suspensions, 0) + (SELECT suspensions FROM relay_counters),
            coalesce(s.commit_graph, false) AND o.snapshot > (
                SELECT min(snapshot) FROM relay_operations WHERE sequence = o.sequence AND state < 3),
            (SELECT d.reason FROM relay_destinations d WHERE d.destination = o.destination)
        FROM relay_operations o LEFT JOIN relay_sequences s ON s.name = o.sequence
        """

    /// The status a row of ``statusColumns`` describes.
    private static func status(from row: PostgresRow) throws -> CallStatus {
        let (
            id, sequence, snapshot, rawState, blockers, attempts, held, availableAt, enqueuedAt, startedAt, finishedAt,
            result, registered, suspensions, gated, offline
        ) = try row.decode(
            (
                UUID, String, Int64, Int16, Int32, Int32, Bool?, Date?, Date, Date?, Date?, ByteBuffer?, Bool, Int32,
                Bool?, String?
            ).self)
        guard let phase = PostgresOperationState(rawValue: rawState) else {
            throw RelayError(.corruptStore, "operation \(id) has state \(rawState), which no Relay writes")
        }
        let name = CallSequence.Name(rawValue: sequence)
        let state: CallStatus.State
        switch phase {
        case .blocked:
            state = .pending(.dependencies(Int(blockers)))
        case .pending:
            if held == true, let availableAt {
                state = .pending(.held(until: availableAt))
            } else if !registered {
                state = .pending(.sequenceNotRegistered(name))
            } else if gated == true {
                state = .pending(.earlierCommit)
            } else if let offline {
                state = .pending(.offline(offline))
            } else {
                state = .pending(suspensions > 0 ? .suspended : .ready)
            }
        case .running:
            state = .running(attempt: Int(attempts))
        case .completed, .skipped, .failed, .cancelled:
            guard let result else { throw RelayError(.corruptStore, "operation \(id) has ended without an outcome") }
            state = .finished(try CallResult(encoded: Data(result.readableBytesView)))
        }
        return CallStatus(
            id: id, sequenceName: name, snapshot: UInt64(snapshot), state: state, attempts: Int(attempts),
            metrics: CallMetrics(
                enqueuedAt: enqueuedAt, startedAt: startedAt, finishedAt: finishedAt,
                queueWait: startedAt.map { .nanoseconds(Int64($0.timeIntervalSince(enqueuedAt) * 1e9)) },
                attempts: Int(attempts)))
    }
}
