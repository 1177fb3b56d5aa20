import Foundation
import PostgresNIO
import Relay

extension PostgresQueue {
    /// Renews the leases of those of `ids` that `owner` holds to `lease` from now.
    ///
    /// Only the operations named are renewed: one whose outcome the owner gave up recording keeps its lease to the
    /// end, and then runs elsewhere.
    ///
    /// - Returns: The operations of `ids` that `owner` still holds; one it thinks it holds and is not among them was
    ///   reclaimed after its lease expired, and its outcome is no longer this owner's to record.
    func renew(_ ids: [UUID], owner: UUID, lease: Duration) async throws -> Set<UUID> {
        try await Self.mapping("renewing leases") {
            var held: Set<UUID> = []
            for id in try await write(
                "renewing leases",
                """
                UPDATE relay_operations SET lease_until = now() + make_interval(secs => \(lease.seconds))
                WHERE id = ANY(\(ids)) AND state = 2 AND owner = \(owner)
                RETURNING id
                """
            ).map({ try $0.decode(UUID.self) }) {
                held.insert(id)
            }
            return held
        }
    }

    /// Counts another attempt of an operation that `owner` holds and retried itself, so that the attempt fences its
    /// outcome and a process that reclaims it later counts it.
    ///
    /// - Returns: Whether `owner` still holds it.
    func advance(_ id: UUID, owner: UUID, to attempt: Int) async throws -> Bool {
        try await Self.mapping("counting an attempt") {
            var held = false
            for _ in try await write(
                "counting an attempt",
                """
                UPDATE relay_operations SET attempts = \(attempt)
                WHERE id = \(id) AND state = 2 AND owner = \(owner) AND attempts < \(attempt)
                RETURNING 1
                """)
            {
                held = true
            }
            return held
        }
    }

    /// Returns every operation whose lease has expired to pending, its attempt counted, so that another process
    /// claims it and runs it again under the same idempotency key.
    ///
    /// - Returns: The operations returned.
    func reclaimExpired() async throws -> [UUID] {
        try await returning(
            "reclaiming expired leases",
            """
            SELECT id FROM relay_operations WHERE state = 2 AND lease_until < now() FOR UPDATE SKIP LOCKED
            """, counted: true)
    }

    /// Gives back operations `owner` holds, at once: when `counted`, the attempt stays counted (it may have sent its
    /// request); otherwise it never began and is uncounted.
    ///
    /// - Returns: The operations given back.
    func giveBack(_ ids: [UUID], owner: UUID, counted: Bool) async throws -> [UUID] {
        try await returning(
            "giving leases back",
            """
            SELECT id FROM relay_operations WHERE id = ANY(\(ids)) AND state = 2 AND owner = \(owner) FOR UPDATE
            """, counted: counted)
    }

    /// Returns the running operations that `selection` names to pending, frees their slots (their sequences' rows
    /// taken in name order, as ``free(_:on:)`` explains) and announces them.
    private func returning(_ what: String, _ selection: PostgresQuery, counted: Bool) async throws -> [UUID] {
        let uncount = counted ? 0 : 1
        var query = PostgresQuery(unsafeSQL: "WITH chosen AS (\(selection.sql)), ")
        query.binds = selection.binds
        query.sql += """
            back AS (
                UPDATE relay_operations o
                SET state = 1, owner = NULL, lease_until = NULL, attempts = o.attempts - \(uncount)
                FROM chosen WHERE o.id = chosen.id
                RETURNING o.id, o.sequence
            ), locked AS (
                SELECT s.name FROM relay_sequences s WHERE s.name IN (SELECT sequence FROM back)
                ORDER BY s.name FOR UPDATE
            ), freed AS (
                UPDATE relay_sequences s SET running = s.running - c.n
                FROM locked JOIN (SELECT sequence, count(*)::integer AS n FROM back GROUP BY sequence) c
                    ON locked.name = c.sequence
                WHERE s.name = locked.name
            ), announced AS (
                SELECT pg_notify('\(Self.readyChannel)', '') FROM (SELECT 1 FROM back LIMIT 1) AS one
            )
            SELECT id FROM back, (SELECT count(*) FROM announced) AS sent
            """
        return try await Self.mapping(what) {
            var returned: [UUID] = []
            for id in try await write(what, query).map({ try $0.decode(UUID.self) }) {
                returned.append(id)
            }
            return returned
        }
    }
}
