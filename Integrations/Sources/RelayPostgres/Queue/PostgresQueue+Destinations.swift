import Foundation
import NIOCore
import PostgresNIO
import Relay

/// Offline destinations, kept for the whole fleet (S9, S28): an operation whose destination did not answer goes back
/// to pending without its attempt and without its sequence's slot, and no process claims the destination's
/// operations until a probe of it, one operation claimed at its probe time, gets an answer.
extension PostgresQueue {
    /// Gives back an operation whose destination did not answer.
    ///
    /// The operation is pending again with the attempt uncounted, its sequence's slot free (claims are woken), and
    /// its destination offline for every process. A destination found offline again by its probe is probed again
    /// later, twice as far apart each time, from a quarter of a second up to thirty seconds.
    ///
    /// - Parameters:
    ///   - id: The operation.
    ///   - owner: The process that runs it.
    ///   - attempt: The attempt of `owner`'s claim.
    ///   - limit: The operation's retry policy's `maximumElapsed`: it fails once this has passed since its first
    ///     attempt, if its destination is still offline.
    /// - Returns: Whether the claim was still `owner`'s at that attempt.
    /// - Throws: ``RelayError/Code/storageFailure``.
    func goOffline(_ id: UUID, owner: UUID, attempt: Int, limit: Duration?) async throws -> Bool {
        try await transaction("giving back an operation whose destination is offline") { connection in
            try await lockSequence(of: id, on: connection)
            var given = false
            for _ in try await rows(
                """
                WITH back AS (
                    UPDATE relay_operations
                    SET state = 1, owner = NULL, lease_until = NULL, attempts = attempts - 1,
                        available_at = CASE WHEN destination IS NULL THEN now() + interval '1 second' END,
                        fail_after = started_at + make_interval(secs => \(limit?.seconds))
                    WHERE id = \(id) AND state = 2 AND owner = \(owner) AND attempts = \(attempt)
                    RETURNING sequence, destination
                ), freed AS (
                    UPDATE relay_sequences s SET running = s.running - 1 FROM back WHERE s.name = back.sequence
                ), offline AS (
                    INSERT INTO relay_destinations AS d (destination, reason, probe_at)
                    SELECT destination, destination || ' did not answer', now() + interval '0.25 seconds'
                    FROM back WHERE destination IS NOT NULL
                    ON CONFLICT (destination) DO UPDATE SET
                        probes = d.probes + 1, prober = NULL,
                        probe_at = now() + least(interval '0.25 seconds' * power(2, d.probes + 1), interval '30 seconds')
                    WHERE d.prober = \(owner)
                )
                SELECT pg_notify(\(Self.readyChannel), \(Self.offlineNotice)) FROM back
                """, on: connection)
            {
                given = true
            }
            return given
        }
    }

    /// What a `readyChannel` notification says when a destination went offline: every process probes it from then
    /// on, until it is online again.
    static let offlineNotice = "offline"

    /// The offline destinations, the longest due first, at most `limit`: those whose probes are due, and whether any
    /// is offline at all.
    func offlineDestinations(limit: Int) async throws -> (due: [String], any: Bool) {
        try await Self.mapping("reading offline destinations") {
            let rows = try await read(
                "reading offline destinations",
                """
                SELECT destination, probe_at <= now() FROM relay_destinations ORDER BY probe_at LIMIT \(limit)
                """
            ).map { try $0.decode((String, Bool).self) }
            return (rows.filter(\.1).map(\.0), !rows.isEmpty)
        }
    }

    /// Forgets an offline destination that no operation waits for or runs: the next one to go there finds out again.
    func forgetIdle(_ destination: String) async throws {
        try await transaction("forgetting an offline destination") { connection in
            // The event log's online event says why.
            _ = try await self.rows("SELECT set_config('relay.forgetting', 'true', true)", on: connection)
            _ = try await self.rows(
                """
                DELETE FROM relay_destinations WHERE destination = \(destination) AND NOT EXISTS (
                    SELECT 1 FROM relay_operations WHERE destination = \(destination) AND state IN (1, 2))
                """, on: connection)
        }
    }

    /// Fails the operations that wait for an offline destination past their retry policies' `maximumElapsed` since
    /// their first attempts, and passes their failures on to their dependents.
    ///
    /// - Returns: The operations that failed.
    func failOverdue() async throws -> [UUID] {
        try await transaction("failing operations offline for too long") { connection in
            var overdue: [(UUID, Int32, String)] = []
            for row in try await rows(
                """
                SELECT o.id, o.attempts, d.reason FROM relay_operations o
                JOIN relay_destinations d ON d.destination = o.destination
                WHERE o.state = 1 AND o.fail_after <= now()
                ORDER BY o.id FOR UPDATE OF o SKIP LOCKED
                """, on: connection)
            {
                overdue.append(try row.decode((UUID, Int32, String).self))
            }
            guard !overdue.isEmpty else { return [] }
            let results = overdue.map { _, attempts, reason in
                let failure = CallFailure(
                    reason: "offline past its maximum elapsed time: \(reason)", attempts: Int(attempts),
                    cause: .offlineTooLong)
                return ByteBuffer(bytes: CallResult.failed(failure).encoded())
            }
            let ids = overdue.map(\.0)
            _ = try await rows(
                """
                UPDATE relay_operations o SET state = \(PostgresOperationState.failed.rawValue), result = f.result,
                    available_at = NULL, finished_at = now()
                FROM unnest(\(ids)::uuid[], \(results)::bytea[]) AS f (id, result)
                WHERE o.id = f.id
                """, on: connection)
            try await passOn([.failed: ids], on: connection)
            return ids
        }
    }

    /// Takes the destinations of operations that got an answer off the offline ones, inside the transaction that
    /// records what they got, and wakes the claims of the operations that waited for them.
    func markOnline(_ ids: [UUID], on connection: PostgresConnection) async throws {
        guard !ids.isEmpty else { return }
        _ = try await rows(
            """
            WITH online AS (
                DELETE FROM relay_destinations d USING relay_operations o
                WHERE o.id = ANY(\(ids)) AND d.destination = o.destination
                RETURNING 1
            )
            SELECT pg_notify(\(Self.readyChannel), '') FROM (SELECT 1 FROM online LIMIT 1) AS one
            """, on: connection)
    }
}
