import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Records an attempt's terminal outcome, if `owner` still holds the operation for `attempt`, and passes it on to
    /// the dependents: a success releases them; a failure or cancellation cancels, transitively, those that do not
    /// run anyway, and releases those that do.
    ///
    /// - Returns: Whether the outcome was recorded; `false` when the lease was lost (the operation was reclaimed, or
    ///   given back), and the outcome is then another attempt's to record.
    func finish(_ id: UUID, owner: UUID, attempt: Int, result: CallResult) async throws -> Bool {
        let state = PostgresOperationState(result)
        return try await transaction("recording an outcome") { connection in
            // The row's lock is taken first: a commit naming it as a dependency has it locked for share, so that
            // this waits for that commit, and the statements below see its dependents.
            var recorded = false
            for try await _ in try await connection.query(
                """
                WITH done AS (
                    UPDATE relay_operations
                    SET state = \(state.rawValue), result = \(ByteBuffer(bytes: result.encoded())),
                        finished_at = now(), owner = NULL, lease_until = NULL
                    WHERE id = \(id) AND state = 2 AND owner = \(owner) AND attempts = \(attempt)
                    RETURNING sequence
                ), freed AS (
                    UPDATE relay_sequences s SET running = s.running - 1 FROM done WHERE s.name = done.sequence
                )
                SELECT 1 FROM done
                """, logger: logger
            ) {
                recorded = true
            }
            guard recorded else { return false }
            try await passOn([id], state, on: connection)
            return true
        }
    }

    /// Passes the end of `ended` (all in `state`) on to their dependents, inside the transaction that ended them.
    func passOn(_ ended: [UUID], _ state: PostgresOperationState, on connection: PostgresConnection) async throws {
        var finished = ended
        if !state.satisfies {
            // Each round cancels the dependents the last one reached; a commit adding a dependent meanwhile holds
            // its dependency for share, so the round after the update that waited for it sees the new dependent.
            var frontier = ended
            var cause = state == .failed ? CallCancellation.dependencyFailed : CallCancellation.dependencyCancelled
            while !frontier.isEmpty {
                var doomed: [(UUID, UUID)] = []
                for try await (dependent, dependency) in try await connection.query(
                    """
                    SELECT DISTINCT ON (o.id) o.id, d.dependency
                    FROM relay_dependencies d JOIN relay_operations o ON o.id = d.dependent
                    WHERE d.dependency = ANY(\(frontier)) AND o.state = 0 AND NOT o.run_anyway
                    ORDER BY o.id, d.dependency
                    """, logger: logger
                ).decode((UUID, UUID).self) {
                    doomed.append((dependent, dependency))
                }
                guard !doomed.isEmpty else { break }
                let results = doomed.map { ByteBuffer(bytes: CallResult.cancelled(cause($0.1)).encoded()) }
                frontier = []
                for try await id in try await connection.query(
                    """
                    UPDATE relay_operations o SET state = 6, blockers = 0, result = c.result, finished_at = now()
                    FROM unnest(\(doomed.map(\.0))::uuid[], \(results)::bytea[]) AS c (id, result)
                    WHERE o.id = c.id AND o.state = 0
                    RETURNING o.id
                    """, logger: logger
                ).decode(UUID.self) {
                    frontier.append(id)
                }
                finished += frontier
                cause = CallCancellation.dependencyCancelled
            }
        }
        var ready = false
        for try await state in try await connection.query(
            """
            UPDATE relay_operations o
            SET blockers = o.blockers - 1, state = CASE WHEN o.blockers = 1 THEN 1 ELSE 0 END
            FROM relay_dependencies d
            WHERE d.dependency = ANY(\(finished)) AND o.id = d.dependent AND o.state = 0
            RETURNING o.state
            """, logger: logger
        ).decode(Int16.self) where state == PostgresOperationState.pending.rawValue {
            ready = true
        }
        try await announce(ready: ready, finished: finished, on: connection)
    }

    /// Returns an operation to pending for another attempt at `at` (now when `nil`), if `owner` still holds it for
    /// `attempt`.
    ///
    /// - Returns: Whether the retry was recorded; `false` when the lease was lost.
    func retry(_ id: UUID, owner: UUID, attempt: Int, at date: Date?) async throws -> Bool {
        try await Self.mapping("scheduling a retry") {
            var recorded = false
            for try await _ in try await client.query(
                """
                WITH back AS (
                    UPDATE relay_operations SET state = 1, owner = NULL, lease_until = NULL, available_at = \(date)
                    WHERE id = \(id) AND state = 2 AND owner = \(owner) AND attempts = \(attempt)
                    RETURNING sequence
                ), freed AS (
                    UPDATE relay_sequences s SET running = s.running - 1 FROM back WHERE s.name = back.sequence
                )
                SELECT pg_notify(\(Self.readyChannel), '') FROM back
                """, logger: logger)
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
