extension PostgresSchema {
    /// `relay_complete`: successful outcomes in one call.
    ///
    /// Each statement of a function takes a snapshot of its own, so that the release sees the dependents of commits
    /// that the first update waited for (see ``PostgresQueue``). The sequences' rows are taken last, and in name
    /// order, as every transaction that takes several takes them: two outcomes of the same sequences, recorded at
    /// once by two processes, then wait for each other instead of deadlocking.
    static let completeFunction = """
        CREATE OR REPLACE FUNCTION relay_complete(
            outcome_ids uuid[], outcome_owners uuid[], outcome_attempts integer[], outcome_states smallint[],
            outcome_results bytea[]
        ) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
        DECLARE
            done uuid[];
            sequences text[];
            ready boolean;
        BEGIN
            WITH ended AS (
                UPDATE relay_operations o
                SET state = i.state, result = i.result, finished_at = now(), owner = NULL, lease_until = NULL
                FROM unnest(outcome_ids, outcome_owners, outcome_attempts, outcome_states, outcome_results)
                    AS i (id, owner, attempt, state, result)
                WHERE o.id = i.id AND o.state = 2 AND o.owner = i.owner AND o.attempts = i.attempt
                RETURNING o.id, o.sequence
            )
            SELECT array_agg(ended.id), array_agg(ended.sequence) INTO done, sequences FROM ended;
            IF done IS NULL THEN
                RETURN;
            END IF;
            WITH links AS (
                SELECT dependent, count(*)::integer AS n FROM relay_dependencies
                WHERE dependency = ANY(done) GROUP BY dependent
            ), locked AS (
                SELECT o.id, links.n FROM relay_operations o JOIN links ON o.id = links.dependent
                WHERE o.state = 0 ORDER BY o.id FOR UPDATE OF o
            ), released AS (
                UPDATE relay_operations o
                SET blockers = o.blockers - locked.n, state = CASE WHEN o.blockers = locked.n THEN 1 ELSE 0 END
                FROM locked WHERE o.id = locked.id
                RETURNING o.state
            )
            SELECT coalesce(bool_or(released.state = 1), false) INTO ready FROM released;
            IF ready THEN
                PERFORM pg_notify('relay_ready', '');
            END IF;
            PERFORM pg_notify('relay_finished', chunk.ids)
            FROM (
                SELECT string_agg(upper(id::text), ',') AS ids
                FROM unnest(done) WITH ORDINALITY AS ended (id, n) GROUP BY (n - 1) / 200
            ) AS chunk;
            PERFORM 1 FROM relay_sequences WHERE name = ANY(sequences) ORDER BY name FOR UPDATE;
            UPDATE relay_sequences s SET running = s.running - c.n
            FROM (SELECT name, count(*)::integer AS n FROM unnest(sequences) AS name GROUP BY name) AS c
            WHERE s.name = c.name;
            RETURN QUERY SELECT unnest(done);
        END
        $$
        """
}
