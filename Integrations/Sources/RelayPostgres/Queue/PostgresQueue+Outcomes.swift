import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// An attempt's terminal outcome, to record if its owner still holds the operation for that attempt.
    struct Outcome: Sendable, Hashable {
        let id: UUID
        let owner: UUID
        let attempt: Int
        let result: CallResult
        /// What the attempt staged, committed with the outcome (S21); see ``finishCommitting(_:)``.
        var changes: [ModelChange] = []
        /// How long its attempts ran, all together; zero when none ran here, which the database keeps as unknown.
        var runTime: Duration = .zero
    }

    /// Records one attempt's terminal outcome; see ``finish(_:)``.
    ///
    /// - Returns: Whether the outcome was recorded; `false` when the lease was lost (the operation was reclaimed, or
    ///   given back), and the outcome is then another attempt's to record.
    func finish(_ id: UUID, owner: UUID, attempt: Int, result: CallResult) async throws -> Bool {
        try await !finish([Outcome(id: id, owner: owner, attempt: attempt, result: result)]).isEmpty
    }

    /// Records terminal outcomes in one transaction, each if its owner still holds the operation for its attempt, and
    /// passes them on to the dependents: a success releases them; a failure or cancellation cancels, transitively,
    /// those that do not run anyway, and releases those that do.
    ///
    /// - Returns: The operations whose outcomes were recorded; the others' leases were lost.
    func finish(_ outcomes: [Outcome]) async throws -> Set<UUID> {
        try await finish(outcomes, thenClaiming: nil).recorded
    }

    /// Records terminal outcomes, as ``finish(_:)`` does, then claims what `request` asks for in the same transaction:
    /// the slots the outcomes free are taken again under the one lock of their sequences' rows and the one commit,
    /// rather than in a transaction of their own once a claim hears of them.
    ///
    /// - Returns: The operations whose outcomes were recorded, and the claims, each sequence's in start order.
    func finish(
        _ outcomes: [Outcome], thenClaiming request: ClaimRequest?
    ) async throws -> (recorded: Set<UUID>, claims: [Claim]) {
        guard !outcomes.isEmpty else { return ([], []) }
        if Self.allSatisfy(outcomes) {
            // The common case in one statement: no dependent is cancelled, so the database does it all.
            let row = try await committing("recording outcomes", Self.completion(of: outcomes, thenClaiming: request))
            return try await Self.mapping("recording outcomes") {
                (Set(try Array(row)[0].decode([UUID].self)), try Self.claims(in: row, from: 1))
            }
        }
        let states = outcomes.map { PostgresOperationState($0.result).rawValue }
        let results = outcomes.map { ByteBuffer(bytes: $0.result.encoded()) }
        let runTimes = outcomes.map(\.runTime.nanoseconds)
        return try await transaction("recording outcomes") { connection in
            // The rows' locks are taken first, in the fleet's lock order: a commit naming one as a dependency has it
            // locked for share, so that this waits for that commit, and the statements below see its dependents.
            let ids = outcomes.map(\.id)
            _ = try await rows(
                """
                SELECT 1 FROM relay_sequences
                WHERE name IN (SELECT sequence FROM relay_operations WHERE id = ANY(\(ids)))
                ORDER BY name FOR UPDATE
                """, on: connection)
            var ended: [PostgresOperationState: [UUID]] = [:]
            var freed: [String: Int] = [:]
            for (id, state, sequence) in try await rows(
                """
                WITH locked AS (SELECT id FROM relay_operations WHERE id = ANY(\(ids)) ORDER BY id FOR UPDATE)
                UPDATE relay_operations o
                SET state = i.state, result = i.result, finished_at = now(), owner = NULL, lease_until = NULL,
                    run_time = NULLIF(i.run_time, 0)
                FROM locked JOIN unnest(
                    \(ids)::uuid[], \(outcomes.map(\.owner))::uuid[],
                    \(outcomes.map(\.attempt))::integer[], \(states)::smallint[], \(results)::bytea[],
                    \(runTimes)::bigint[]
                ) AS i (id, owner, attempt, state, result, run_time) ON locked.id = i.id
                WHERE o.id = i.id AND o.state = 2 AND o.owner = i.owner AND o.attempts = i.attempt
                RETURNING o.id, o.state, o.sequence
                """, on: connection
            ).map({ try $0.decode((UUID, Int16, String).self) }) {
                guard let state = PostgresOperationState(rawValue: state) else { continue }
                ended[state, default: []].append(id)
                freed[sequence, default: 0] += 1
            }
            try await passOn(ended, on: connection)
            try await free(freed, on: connection)
            // A failure the destination answered brings it back; one of an operation that waited too long for it
            // does not.
            let answered = outcomes.filter { outcome in
                guard case .failed(let failure) = outcome.result else { return false }
                return failure.cause != .offlineTooLong
            }.map(\.id)
            try await markOnline(answered.filter(Set(ended[.failed] ?? []).contains), on: connection)
            let recorded = Set(ended.values.joined())
            guard let request else { return (recorded, []) }
            return (recorded, try await claim(request, on: connection))
        }
    }

    /// Whether every outcome satisfies its dependents, so that ``completion(of:)`` records them all.
    static func allSatisfy(_ outcomes: [Outcome]) -> Bool {
        outcomes.allSatisfy { PostgresOperationState($0.result).satisfies }
    }

    /// The call of `relay_complete_committing` that records outcomes that all satisfy their dependents, then claims
    /// what `request` asks for, and commits; it answers with the ids of the outcomes recorded and the claims.
    static func completion(of outcomes: [Outcome], thenClaiming request: ClaimRequest?) -> PostgresQuery {
        let states = outcomes.map { PostgresOperationState($0.result).rawValue }
        let results = outcomes.map { ByteBuffer(bytes: $0.result.encoded()) }
        let names = request?.sequences?.map(\.rawValue)
        return """
            CALL relay_complete_committing(
                \(outcomes.map(\.id))::uuid[], \(outcomes.map(\.owner))::uuid[],
                \(outcomes.map(\.attempt))::integer[], \(states)::smallint[], \(results)::bytea[],
                \(outcomes.map(\.runTime.nanoseconds))::bigint[],
                \(request?.owner)::uuid, \(names)::text[], \(request?.limit ?? 0)::integer,
                \(request?.lease.seconds ?? 0)::double precision,
                NULL, NULL, NULL, NULL, NULL, NULL, NULL)
            """
    }

    /// The call of `relay_complete` that records outcomes that all satisfy their dependents, returning the ids of
    /// those recorded.
    static func completion(of outcomes: [Outcome]) -> PostgresQuery {
        let states = outcomes.map { PostgresOperationState($0.result).rawValue }
        let results = outcomes.map { ByteBuffer(bytes: $0.result.encoded()) }
        return """
            SELECT relay_complete(
                \(outcomes.map(\.id))::uuid[], \(outcomes.map(\.owner))::uuid[],
                \(outcomes.map(\.attempt))::integer[], \(states)::smallint[], \(results)::bytea[],
                \(outcomes.map(\.runTime.nanoseconds))::bigint[])
            """
    }

    /// Frees the slots of operations that stopped running, by sequence.
    ///
    /// The sequences' rows are the transaction's already: it took them first, in the fleet's lock order.
    func free(_ slots: [String: Int], on connection: PostgresConnection) async throws {
        guard !slots.isEmpty else { return }
        let names = slots.keys.sorted()
        _ = try await rows(
            """
            UPDATE relay_sequences s SET running = s.running - c.n
            FROM unnest(\(names)::text[], \(names.map { slots[$0]! })::integer[]) AS c (name, n)
            WHERE s.name = c.name
            """, on: connection)
    }

    /// Passes the ends of operations, by terminal state, on to their dependents, inside the transaction that ended
    /// them.
    func passOn(_ ended: [PostgresOperationState: [UUID]], on connection: PostgresConnection) async throws {
        var finished = Array(ended.values.joined())
        let failed = Set(ended[.failed] ?? [])
        // Each round cancels the dependents the last one reached; a commit adding a dependent meanwhile holds its
        // dependency for share, so the round after the update that waited for it sees the new dependent.
        var frontier = (ended[.failed] ?? []) + (ended[.cancelled] ?? [])
        while !frontier.isEmpty {
            var doomed: [(UUID, UUID)] = []
            for (dependent, dependency) in try await rows(
                """
                SELECT DISTINCT ON (o.id) o.id, d.dependency
                FROM relay_dependencies d JOIN relay_operations o ON o.id = d.dependent
                WHERE d.dependency = ANY(\(frontier)) AND o.state = 0 AND NOT o.run_anyway
                ORDER BY o.id, d.dependency
                """, on: connection
            ).map({ try $0.decode((UUID, UUID).self) }) {
                doomed.append((dependent, dependency))
            }
            guard !doomed.isEmpty else { break }
            let results = doomed.map { dependent, dependency in
                let cause: CallCancellation =
                    failed.contains(dependency) ? .dependencyFailed(dependency) : .dependencyCancelled(dependency)
                return ByteBuffer(bytes: CallResult.cancelled(cause).encoded())
            }
            frontier = []
            for id in try await rows(
                """
                WITH locked AS (
                    SELECT o.id, c.result FROM relay_operations o
                    JOIN unnest(\(doomed.map(\.0))::uuid[], \(results)::bytea[]) AS c (id, result) ON o.id = c.id
                    WHERE o.state = 0 ORDER BY o.id FOR UPDATE OF o
                )
                UPDATE relay_operations o SET state = 6, blockers = 0, result = locked.result, finished_at = now()
                FROM locked WHERE o.id = locked.id
                RETURNING o.id
                """, on: connection
            ).map({ try $0.decode(UUID.self) }) {
                frontier.append(id)
            }
            finished += frontier
        }
        // Dependents are locked in the order of their ids, so that processes releasing the same ones at once never
        // deadlock.
        var ready = false
        for state in try await rows(
            """
            WITH links AS (
                SELECT dependent, count(*)::integer AS n FROM relay_dependencies
                WHERE dependency = ANY(\(finished)) GROUP BY dependent
            ), locked AS (
                SELECT o.id, links.n FROM relay_operations o JOIN links ON o.id = links.dependent
                WHERE o.state = 0 ORDER BY o.id FOR UPDATE OF o
            )
            UPDATE relay_operations o
            SET blockers = o.blockers - locked.n, state = CASE WHEN o.blockers = locked.n THEN 1 ELSE 0 END
            FROM locked WHERE o.id = locked.id
            RETURNING o.state
            """, on: connection
        ).map({ try $0.decode(Int16.self) }) where state == PostgresOperationState.pending.rawValue {
            ready = true
        }
        try await announce(ready: ready, finished: finished, on: connection)
    }

    /// Takes the row of operation `id`'s sequence, first as the fleet's lock order says, before the operation's own.
    func lockSequence(of id: UUID, on connection: PostgresConnection) async throws {
        _ = try await rows(
            """
            SELECT 1 FROM relay_sequences
            WHERE name = (SELECT sequence FROM relay_operations WHERE id = \(id)) FOR UPDATE
            """, on: connection)
    }

    /// Returns an operation to pending for another attempt at `at` (now when `nil`), if `owner` still holds it for
    /// `attempt`.
    ///
    /// - Returns: Whether the retry was recorded; `false` when the lease was lost.
    func retry(_ id: UUID, owner: UUID, attempt: Int, at date: Date?) async throws -> Bool {
        try await transaction("scheduling a retry") { connection in
            try await lockSequence(of: id, on: connection)
            var recorded = false
            for _ in try await rows(
                """
                WITH back AS (
                    UPDATE relay_operations SET state = 1, owner = NULL, lease_until = NULL, available_at = \(date)
                    WHERE id = \(id) AND state = 2 AND owner = \(owner) AND attempts = \(attempt)
                    RETURNING sequence
                ), freed AS (
                    UPDATE relay_sequences s SET running = s.running - 1 FROM back WHERE s.name = back.sequence
                )
                SELECT pg_notify(\(Self.readyChannel), '') FROM back
                """, on: connection)
            {
                recorded = true
            }
            return recorded
        }
    }
}

extension PostgresOperationState {
    /// The terminal state of `result`.
    init(_ result: CallResult) {
        switch result {
        case .completed: self = .completed
        case .skipped: self = .skipped
        case .failed: self = .failed
        case .cancelled: self = .cancelled
        }
    }
}
