import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Enqueues one commit, durably before it returns; see ``enqueue(_:startTimes:on:)``.
    ///
    /// A commit that names no stored operation takes one round trip, `relay_enqueue_committing`, answered once it is
    /// durable. One that does, or that the procedure did not write, takes the way that reads what is stored, in a
    /// transaction of its own; so does one whose call found its connection lost, which may have committed before its
    /// answer was lost: that way then finds the operations as the call stored them, and answers as the call would
    /// have, rather than as for operations enqueued before (S1).
    func enqueue(
        _ operations: [CallOperation], startTimes: [UUID: Date] = [:], enqueuer: UUID? = nil
    ) async throws -> Enqueued {
        var afterLostCall = false
        if let call = Self.newCommit(operations, startTimes: startTimes, enqueuer: enqueuer, committing: true) {
            if let row = try await committingUnlessLost("enqueueing a commit", call.query) {
                let (snapshot, written) = try await Self.mapping("enqueueing a commit") {
                    try row.decode((Int64?, Bool?).self)
                }
                if let snapshot, written == true { return Enqueued(snapshot: UInt64(snapshot), added: call.added) }
            } else {
                afterLostCall = true
            }
        }
        return try await transaction("enqueueing a commit") { [afterLostCall] connection in
            try await enqueue(
                operations, startTimes: startTimes, enqueuer: enqueuer, afterLostCall: afterLostCall, on: connection)
        }
    }

    /// Enqueues one commit on `connection`, inside the transaction open on it.
    ///
    /// The transaction is the application's own (S30), or one of the queue's. Nothing is visible to other processes
    /// before it commits, and nothing is left if it rolls back.
    ///
    /// The commit takes the counters' row lock for its snapshot number, so that commits become visible in the order
    /// of their numbers; a transaction that enqueues holds other enqueues until it ends. The dependencies it names
    /// are locked for share, so that one finishing at the same moment waits for this commit and then releases the
    /// dependents it adds (no lost fan-in).
    ///
    /// An operation named in `startTimes` is claimed by no process before its time, on the database's clock; one
    /// stored already keeps its own schedule.
    ///
    /// The event log names `enqueuer` as the origin of the operations' enqueued events: that process announces them
    /// itself. With `nil`, every process announces them, once the transaction commits.
    ///
    /// With `afterLostCall`, the commit was sent before as one call whose connection was lost: when every one of its
    /// operations is stored, with its content, under one snapshot number, that call committed them, and they are
    /// answered as added under that number.
    ///
    /// - Throws: ``RelayError/Code/unknownDependency`` for a dependency neither stored nor in the commit,
    ///   ``RelayError/Code/conflictingOperation`` for a known id with other content,
    ///   ``RelayError/Code/dependencyCycle`` for dependencies that close a cycle, ``RelayError/Code/unknownSequence``
    ///   for a sequence never registered, or ``RelayError/Code/invalidArgument`` for an empty commit; the
    ///   transaction is then to be rolled back.
    func enqueue(
        _ operations: [CallOperation], startTimes: [UUID: Date] = [:], enqueuer: UUID? = nil,
        afterLostCall: Bool = false, on connection: PostgresConnection
    ) async throws -> Enqueued {
        guard !operations.isEmpty else { throw RelayError(.invalidArgument, "a commit needs at least one operation") }
        let snapshot: Int64
        switch try await enqueueNew(operations, startTimes: startTimes, enqueuer: enqueuer, on: connection) {
        case .written(let enqueued): return enqueued
        case .numbered(let number): snapshot = number
        case .notTried:
            snapshot = Int64(try await number(enqueuer: enqueuer, on: connection))
        }
        let ids = operations.map(\.id)
        let named = Array(Set(ids).union(operations.flatMap(\.dependencies)))
        var stored: [UUID: PostgresOperationState] = [:]
        var outcomes: [UUID: CallResult] = [:]
        var storedSnapshots: Set<Int64> = []
        for (id, state, body, result, storedSnapshot) in try await rows(
            """
            SELECT id, state, CASE WHEN id = ANY(\(ids)) THEN body END, CASE WHEN id = ANY(\(ids)) THEN result END,
                CASE WHEN id = ANY(\(ids)) THEN snapshot END
            FROM relay_operations WHERE id = ANY(\(named)) FOR SHARE
            """, on: connection
        ).map({ try $0.decode((UUID, Int16, ByteBuffer?, ByteBuffer?, Int64?).self) }) {
            stored[id] = PostgresOperationState(rawValue: state)
            if let storedSnapshot { storedSnapshots.insert(storedSnapshot) }
            if let body, let operation = operations.first(where: { $0.id == id }),
                try CallOperation(encoded: Data(body.readableBytesView)) != operation
            {
                throw RelayError(
                    .conflictingOperation, "operation \(id) is stored already with other content; nothing was enqueued")
            }
            if let result { outcomes[id] = try CallResult(encoded: Data(result.readableBytesView)) }
        }
        if afterLostCall, ids.allSatisfy({ stored[$0] != nil }), storedSnapshots.count == 1,
            let written = storedSnapshots.first
        {
            // Content checked above: the lost call wrote them.
            return Enqueued(snapshot: UInt64(written), added: ids, outcomes: outcomes)
        }
        var plan = PostgresCommitPlan(
            operations.enumerated().filter { stored[$0.element.id] == nil }.map { ($0.offset, $0.element) },
            stored: stored)
        if let unknown = plan.unknownDependency {
            throw RelayError(
                .unknownDependency, "dependency \(unknown) is neither stored nor in the commit; nothing was enqueued")
        }
        if let cycle = plan.cycle {
            throw RelayError(
                .dependencyCycle,
                "dependencies form a cycle: \(cycle.map(\.uuidString).joined(separator: " → ")); nothing was enqueued",
                operationIDs: cycle)
        }
        let sequences = Array(Set(plan.sequences))
        var registered: Set<String> = []
        for name in try await rows(
            "SELECT name FROM relay_sequences WHERE name = ANY(\(sequences))", on: connection
        ).map({ try $0.decode(String.self) }) {
            registered.insert(name)
        }
        if let unknown = sequences.sorted().first(where: { !registered.contains($0) }) {
            throw RelayError(.unknownSequence, "sequence \(unknown) is not registered; nothing was enqueued")
        }
        plan.settle()
        guard !plan.rows.isEmpty else { return Enqueued(snapshot: UInt64(snapshot), added: [], outcomes: outcomes) }
        let rows = plan.rows
        _ = try await self.rows(
            """
            INSERT INTO relay_operations (
                id, sequence, snapshot, ordinal, priority, state, blockers, run_anyway, body, result, finished_at,
                destination)
            SELECT id, sequence, \(snapshot), ordinal, priority, state, blockers, run_anyway, body,
                NULLIF(result, '\\x'::bytea), CASE WHEN state >= 3 THEN now() END, destination
            FROM unnest(
                \(rows.map(\.id))::uuid[], \(rows.map(\.sequence))::text[], \(rows.map(\.ordinal))::integer[],
                \(rows.map(\.priority))::bigint[], \(rows.map(\.state))::smallint[], \(rows.map(\.blockers))::integer[],
                \(rows.map(\.runAnyway))::boolean[], \(rows.map(\.body))::bytea[], \(rows.map(\.result))::bytea[],
                \(rows.map(\.destination))::text[]
            ) AS row (id, sequence, ordinal, priority, state, blockers, run_anyway, body, result, destination)
            """, on: connection)
        let starts = rows.compactMap { row in startTimes[row.id].map { (row.id, $0) } }
        if !starts.isEmpty {
            _ = try await self.rows(
                """
                UPDATE relay_operations o SET available_at = s.at
                FROM unnest(\(starts.map(\.0))::uuid[], \(starts.map(\.1))::timestamptz[]) AS s (id, at)
                WHERE o.id = s.id
                """, on: connection)
        }
        let links = rows.flatMap { row in row.dependencies.map { ($0, row.id) } }
        if !links.isEmpty {
            _ = try await self.rows(
                """
                INSERT INTO relay_dependencies (dependency, dependent)
                SELECT * FROM unnest(\(links.map(\.0))::uuid[], \(links.map(\.1))::uuid[])
                """, on: connection)
        }
        try await announce(
            ready: rows.contains { $0.state == PostgresOperationState.pending.rawValue },
            finished: rows.filter { $0.state >= PostgresOperationState.completed.rawValue }.map(\.id),
            on: connection)
        for row in rows where row.result.readableBytes > 0 {
            outcomes[row.id] = try CallResult(encoded: Data(row.result.readableBytesView))
        }
        return Enqueued(snapshot: UInt64(snapshot), added: rows.map(\.id), outcomes: outcomes)
    }

    /// What ``enqueueNew(_:startTimes:on:)`` did.
    private enum NewCommit {
        /// The commit names stored operations, or is refused: it is for the way that reads what is stored.
        case notTried
        /// The commit took this snapshot number, and found a stored id or an unregistered sequence: the way that
        /// reads what is stored goes on with the number.
        case numbered(Int64)
        /// The commit is written.
        case written(Enqueued)
    }

    /// Writes a commit whose dependencies are all its own in one call, when none of its operations is stored: the
    /// common case, in one round trip instead of five.
    private func enqueueNew(
        _ operations: [CallOperation], startTimes: [UUID: Date], enqueuer: UUID?, on connection: PostgresConnection
    ) async throws -> NewCommit {
        guard let call = Self.newCommit(operations, startTimes: startTimes, enqueuer: enqueuer, committing: false)
        else { return .notTried }
        guard let numbered = try await rows(call.query, on: connection).first?.decode((Int64, Bool).self) else {
            throw Self.unnumbered
        }
        let (snapshot, written) = numbered
        guard written else { return .numbered(snapshot) }
        return .written(Enqueued(snapshot: UInt64(snapshot), added: call.added))
    }

    /// The call that writes a commit whose dependencies are all its own, and the ids it adds if it writes it.
    ///
    /// `nil` when a dependency is outside the commit, an id repeats or the dependencies close a cycle, which the way
    /// that reads what is stored tells apart. With `committing`, the procedure that commits, called outside a
    /// transaction block; otherwise the function, inside the caller's transaction.
    private static func newCommit(
        _ operations: [CallOperation], startTimes: [UUID: Date], enqueuer: UUID?, committing: Bool
    ) -> (query: PostgresQuery, added: [UUID])? {
        let ids = Set(operations.map(\.id))
        guard !operations.isEmpty, ids.count == operations.count,
            operations.allSatisfy({ $0.dependencies.isSubset(of: ids) })
        else { return nil }
        var plan = PostgresCommitPlan(operations.enumerated().map { ($0.offset, $0.element) }, stored: [:])
        guard plan.cycle == nil else { return nil }
        plan.settle()
        let rows = plan.rows
        let links = rows.flatMap { row in row.dependencies.map { ($0, row.id) } }
        let starts = rows.compactMap { row in startTimes[row.id].map { (row.id, $0) } }
        let query: PostgresQuery = """
            \(unescaped: committing ? "CALL relay_enqueue_committing(" : "SELECT * FROM relay_enqueue(")
                \(enqueuer)::uuid,
                \(rows.map(\.id))::uuid[], \(rows.map(\.sequence))::text[], \(rows.map(\.ordinal))::integer[],
                \(rows.map(\.priority))::bigint[], \(rows.map(\.state))::smallint[],
                \(rows.map(\.blockers))::integer[], \(rows.map(\.runAnyway))::boolean[],
                \(rows.map(\.body))::bytea[], \(rows.map(\.destination))::text[],
                \(links.map(\.0))::uuid[], \(links.map(\.1))::uuid[], \(starts.map(\.0))::uuid[],
                \(starts.map(\.1))::timestamptz[]\(unescaped: committing ? ", NULL, NULL)" : ")")
            """
        return (query, rows.map(\.id))
    }

    /// Sends the notifications of a change inside the transaction that makes it, so that listeners hear of it once
    /// it commits, and never of one that rolls back.
    ///
    /// Finished operations are announced many to a notification, their ids separated by commas, within the payload's
    /// limit of 8,000 bytes.
    func announce(ready: Bool, finished: [UUID], on connection: PostgresConnection) async throws {
        guard ready || !finished.isEmpty else { return }
        let payloads = stride(from: 0, to: finished.count, by: Self.idsPerNotification).map { start in
            finished[start..<min(start + Self.idsPerNotification, finished.count)].map(\.uuidString)
                .joined(separator: ",")
        }
        _ = try await self.rows(
            """
            SELECT pg_notify(\(Self.readyChannel), '') WHERE \(ready)
            UNION ALL SELECT pg_notify(\(Self.finishedChannel), ids) FROM unnest(\(payloads)::text[]) AS ended (ids)
            """, on: connection)
    }

    /// The counters' row is missing: a schema damaged by hand.
    static let unnumbered = RelayError(
        .storageFailure, "the database gave no snapshot number for a commit; its relay_counters row is missing")

    /// How many ids fit one notification's payload: 36 characters and a comma each.
    static let idsPerNotification = 200
}
