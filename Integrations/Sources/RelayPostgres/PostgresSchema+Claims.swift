extension PostgresSchema {
    /// Schema version 16: `relay_claim`, the claim in one call, whose plan its connection keeps.
    ///
    /// A claim's statement is the largest the queue sends, and planning it took about a third of its time on every
    /// call; a function's statements are planned once a connection. It claims up to `claim_limit` operations of each
    /// sequence among `names` (all when `NULL`) that has free slots, in start order, each for one attempt under a lease
    /// of `lease_seconds`: the sequences' rows first (`SKIP LOCKED`), by name, then the operations', as every
    /// transaction of the fleet takes them (see ``PostgresQueue``). Operations of offline destinations are passed over;
    /// with `probing`, one operation of that destination is claimed instead, if its probe is due, as its probe.
    static let claimStatements = [
        """
        CREATE FUNCTION relay_claim(
            claimer uuid, names text[], claim_limit integer, lease_seconds double precision, probing text
        ) RETURNS TABLE (
            snapshot bigint, attempts integer, body bytea, enqueued_at timestamptz, cancel_requested boolean,
            started_at timestamptz
        ) LANGUAGE plpgsql AS $$
        #variable_conflict use_column
        BEGIN
            RETURN QUERY
            WITH open AS (
                SELECT s.name, LEAST(s.bunch_size - s.running, claim_limit) AS free, s.commit_graph
                FROM relay_sequences s
                WHERE s.running < s.bunch_size AND s.suspensions = 0
                    AND (names IS NULL OR s.name = ANY(names))
                    AND (SELECT c.suspensions FROM relay_counters c) = 0
                ORDER BY s.name
                FOR UPDATE OF s SKIP LOCKED
            ), picked AS (
                SELECT o.id FROM open, LATERAL (
                    SELECT r.id FROM relay_operations r
                    WHERE r.sequence = open.name AND r.state = 1
                        AND (r.available_at IS NULL OR r.available_at <= now())
                        AND (r.held_until IS NULL OR r.held_until <= now())
                        AND CASE WHEN probing IS NULL THEN
                            -- Read once a statement: with no destination offline, no row looks one up.
                            NOT EXISTS (SELECT 1 FROM relay_destinations) OR r.destination IS NULL OR NOT EXISTS (
                                SELECT 1 FROM relay_destinations d WHERE d.destination = r.destination)
                        ELSE r.destination = probing AND EXISTS (
                            SELECT 1 FROM relay_destinations d
                            WHERE d.destination = probing AND d.probe_at <= now())
                        END
                        AND (NOT open.commit_graph OR r.snapshot <= (
                            SELECT min(u.snapshot) FROM relay_operations u
                            WHERE u.sequence = open.name AND u.state < 3))
                    ORDER BY r.priority DESC, r.snapshot, r.ordinal
                    LIMIT open.free
                    FOR UPDATE
                ) o
                LIMIT CASE WHEN probing IS NULL THEN NULL ELSE 1 END
            ), claimed AS (
                UPDATE relay_operations o
                SET state = 2, owner = claimer, attempts = o.attempts + 1,
                    lease_until = now() + make_interval(secs => lease_seconds),
                    started_at = coalesce(o.started_at, clock_timestamp())
                FROM picked WHERE o.id = picked.id
                RETURNING o.sequence, o.priority, o.snapshot, o.ordinal, o.attempts, o.body, o.enqueued_at,
                    o.cancel_requested, o.started_at
            ), counted AS (
                UPDATE relay_sequences s SET running = s.running + c.n
                FROM (SELECT claimed.sequence, count(*)::integer AS n FROM claimed GROUP BY claimed.sequence) c
                WHERE s.name = c.sequence
            ), probe AS (
                UPDATE relay_destinations d SET prober = claimer,
                    probe_at = now() + make_interval(secs => lease_seconds)
                WHERE d.destination = probing AND EXISTS (SELECT 1 FROM claimed)
            )
            SELECT claimed.snapshot, claimed.attempts, claimed.body, claimed.enqueued_at, claimed.cancel_requested,
                claimed.started_at
            FROM claimed
            ORDER BY claimed.sequence, claimed.priority DESC, claimed.snapshot, claimed.ordinal;
        END
        $$
        """
    ]
}
