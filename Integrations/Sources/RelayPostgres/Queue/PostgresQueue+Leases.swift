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
                WITH locked AS (
                    SELECT id FROM relay_operations WHERE id = ANY(\(ids)) AND state = 2 AND owner = \(owner)
                    ORDER BY id FOR UPDATE
                )
                UPDATE relay_operations o SET lease_until = now() + make_interval(secs => \(lease.seconds))
                FROM locked WHERE o.id = locked.id
                RETURNING o.id
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
            "state = 2 AND lease_until < now()", skippingLocked: true, counted: true)
    }

    /// Gives back operations `owner` holds, at once: when `counted`, the attempt stays counted (it may have sent its
    /// request); otherwise it never began and is uncounted.
    ///
    /// - Returns: The operations given back.
    func giveBack(_ ids: [UUID], owner: UUID, counted: Bool) async throws -> [UUID] {
        try await returning(
            "giving leases back",
            "id = ANY(\(ids)) AND state = 2 AND owner = \(owner)", skippingLocked: false, counted: counted)
    }

    /// Gives back an operation whose attempt `attempt`, under `owner`'s claim, asked for a retry: pending again with
    /// the attempt counted, claimed by no process before `date`, its sequence's slot free meanwhile.
    ///
    /// - Returns: Whether the claim was still `owner`'s at that attempt.
    func giveBack(_ id: UUID, owner: UUID, attempt: Int, until date: Date) async throws -> Bool {
        try await !returning(
            "giving a retry back",
            "id = \(id) AND state = 2 AND owner = \(owner) AND attempts = \(attempt)", skippingLocked: false,
            counted: true, availableAt: date
        ).isEmpty
    }

    /// Returns the running operations that `predicate` selects to pending, frees their slots and announces them, in
    /// the fleet's lock order: their sequences' rows first, in a statement of their own, then theirs.
    private func returning(
        _ what: String, _ predicate: PostgresQuery, skippingLocked: Bool, counted: Bool, availableAt: Date? = nil
    ) async throws -> [UUID] {
        let uncount = counted ? 0 : 1
        // A number this store formats, not text from outside: safe in the statement's text.
        let start = availableAt.map {
            ", available_at = to_timestamp(\(String(format: "%.6f", $0.timeIntervalSince1970)))"
        }
        var sequences = PostgresQuery(
            unsafeSQL: """
                SELECT 1 FROM relay_sequences
                WHERE name IN (SELECT sequence FROM relay_operations WHERE \(predicate.sql))
                ORDER BY name FOR UPDATE
                """)
        sequences.binds = predicate.binds
        var query = PostgresQuery(
            unsafeSQL: """
                WITH chosen AS (
                    SELECT id FROM relay_operations WHERE \(predicate.sql)
                    ORDER BY id FOR UPDATE\(skippingLocked ? " SKIP LOCKED" : "")
                ), back AS (
                    UPDATE relay_operations o
                    SET state = 1, owner = NULL, lease_until = NULL, attempts = o.attempts - \(uncount)\(start ?? "")
                    FROM chosen WHERE o.id = chosen.id
                    RETURNING o.id, o.sequence, o.destination
                ), online AS (
                    -- A retry got an answer: its destination is offline no more.
                    DELETE FROM relay_destinations d USING back
                    WHERE \(availableAt != nil) AND d.destination = back.destination
                ), freed AS (
                    UPDATE relay_sequences s SET running = s.running - c.n
                    FROM (SELECT sequence, count(*)::integer AS n FROM back GROUP BY sequence) c
                    WHERE s.name = c.sequence
                ), announced AS (
                    SELECT pg_notify('\(Self.readyChannel)', '') FROM (SELECT 1 FROM back LIMIT 1) AS one
                )
                SELECT id FROM back, (SELECT count(*) FROM announced) AS sent
                """)
        query.binds = predicate.binds
        return try await transaction(what) { [sequences, query] connection in
            _ = try await rows(sequences, on: connection)
            return try await rows(query, on: connection).map { try $0.decode(UUID.self) }
        }
    }
}
