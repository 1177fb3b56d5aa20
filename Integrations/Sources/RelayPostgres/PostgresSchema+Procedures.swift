extension PostgresSchema {
    /// Schema version 20: the claim, and the outcomes with the claim that takes the slots they free, each in one round
    /// trip: procedures that commit their own transaction before they answer.
    ///
    /// A transaction of the queue is `BEGIN`, its statements and `COMMIT`, each a round trip that the connection waits
    /// for; in P13 about a third of the server's connections were waiting for the process's next statement at any
    /// moment. A procedure called outside a transaction block runs its `COMMIT` itself, and its answer (its `INOUT`
    /// arguments, the claims as arrays) is sent after that commit is durable, so it acknowledges nothing early, where a
    /// function called alone is answered before the implicit transaction around it commits.
    static let procedureStatements = [
        """
        CREATE PROCEDURE relay_claim_committing(
            claimer uuid, names text[], claim_limit integer, lease_seconds double precision, probing text,
            INOUT claimed_snapshots bigint[] DEFAULT NULL, INOUT claimed_attempts integer[] DEFAULT NULL,
            INOUT claimed_bodies bytea[] DEFAULT NULL, INOUT claimed_enqueued timestamptz[] DEFAULT NULL,
            INOUT claimed_cancels boolean[] DEFAULT NULL, INOUT claimed_starts timestamptz[] DEFAULT NULL
        ) LANGUAGE plpgsql AS $$
        BEGIN
            \(claimingInto(limit: "claim_limit", probing: "probing"))
            COMMIT;
        END
        $$
        """,
        """
        CREATE PROCEDURE relay_complete_committing(
            outcome_ids uuid[], outcome_owners uuid[], outcome_attempts integer[], outcome_states smallint[],
            outcome_results bytea[], outcome_run_times bigint[],
            claimer uuid, names text[], claim_limit integer, lease_seconds double precision,
            INOUT recorded uuid[] DEFAULT NULL,
            INOUT claimed_snapshots bigint[] DEFAULT NULL, INOUT claimed_attempts integer[] DEFAULT NULL,
            INOUT claimed_bodies bytea[] DEFAULT NULL, INOUT claimed_enqueued timestamptz[] DEFAULT NULL,
            INOUT claimed_cancels boolean[] DEFAULT NULL, INOUT claimed_starts timestamptz[] DEFAULT NULL
        ) LANGUAGE plpgsql AS $$
        BEGIN
            SELECT coalesce(array_agg(ended.id), '{}') INTO recorded FROM relay_complete(
                outcome_ids, outcome_owners, outcome_attempts, outcome_states, outcome_results, outcome_run_times
            ) AS ended (id);
            \(claimingInto(limit: "claim_limit", probing: "NULL"))
            COMMIT;
        END
        $$
        """,
    ]

    /// Schema version 21: a commit of new operations in one round trip, `relay_enqueue_committing`, which calls
    /// `relay_enqueue` and commits what it wrote before it answers.
    ///
    /// When `relay_enqueue` writes nothing (an id is stored, or a sequence is not registered), the procedure rolls
    /// back its snapshot number too, and the caller takes the way that reads what is stored, in a transaction of its
    /// own.
    static let enqueueProcedureStatements = [
        """
        CREATE PROCEDURE relay_enqueue_committing(
            enqueuer uuid,
            operation_ids uuid[], operation_sequences text[], operation_ordinals integer[],
            operation_priorities bigint[], operation_states smallint[], operation_blockers integer[],
            operation_run_anyway boolean[], operation_bodies bytea[], operation_destinations text[],
            link_dependencies uuid[], link_dependents uuid[], start_ids uuid[], start_times timestamptz[],
            INOUT commit_snapshot bigint DEFAULT NULL, INOUT commit_written boolean DEFAULT NULL
        ) LANGUAGE plpgsql AS $$
        BEGIN
            SELECT e.commit_snapshot, e.commit_written INTO commit_snapshot, commit_written FROM relay_enqueue(
                enqueuer, operation_ids, operation_sequences, operation_ordinals, operation_priorities,
                operation_states, operation_blockers, operation_run_anyway, operation_bodies, operation_destinations,
                link_dependencies, link_dependents, start_ids, start_times
            ) AS e;
            IF commit_written THEN
                COMMIT;
            ELSE
                ROLLBACK;
            END IF;
        END
        $$
        """
    ]

    /// The statement of both procedures that claims, through `relay_claim`, into their `claimed_` arrays, in the
    /// order `relay_claim` gives (each sequence's in start order); none when `limit` is zero.
    private static func claimingInto(limit: String, probing: String) -> String {
        """
        SELECT coalesce(array_agg(c.snapshot ORDER BY c.n), '{}'),
                    coalesce(array_agg(c.attempts ORDER BY c.n), '{}'), coalesce(array_agg(c.body ORDER BY c.n), '{}'),
                    coalesce(array_agg(c.enqueued_at ORDER BY c.n), '{}'),
                    coalesce(array_agg(c.cancel_requested ORDER BY c.n), '{}'),
                    coalesce(array_agg(c.started_at ORDER BY c.n), '{}')
                INTO claimed_snapshots, claimed_attempts, claimed_bodies, claimed_enqueued, claimed_cancels,
                    claimed_starts
                FROM relay_claim(claimer, names, \(limit), lease_seconds, \(probing)) WITH ORDINALITY
                    AS c (snapshot, attempts, body, enqueued_at, cancel_requested, started_at, n)
                WHERE \(limit) > 0;
        """
    }
}
