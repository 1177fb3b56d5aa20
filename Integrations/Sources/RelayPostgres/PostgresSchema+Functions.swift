extension PostgresSchema {
    /// `relay_complete`: successful outcomes in one call.
    ///
    /// Each statement of a function takes a snapshot of its own, so that the release sees the dependents of commits
    /// that the first update waited for (see ``PostgresQueue``). It takes its rows in the fleet's lock order (see
    /// ``PostgresQueue``): the sequences' first, by name, then the operations', by id.
    static let completeFunction = completeFunction(lookingForDependents: false)

    /// The text of `relay_complete`; when `lookingForDependents` (schema version 10 on), the release of dependents
    /// runs only when an ended operation has one, which an index look-up tells at a fraction of the release's cost;
    /// when `markingOnline` (schema version 14 on), the destinations of the ended operations are offline no more:
    /// they answered; when `recordingRunTimes` (schema version 17 on), each outcome comes with how long its attempts
    /// ran, in nanoseconds (zero, kept as `NULL`, when none ran), for the fleet's metrics; when `probingEachId`
    /// (schema version 19 on), the sequences are found through one look-up of the primary key per outcome (see
    /// ``probingStatements``).
    static func completeFunction(
        lookingForDependents: Bool, markingOnline: Bool = false, recordingRunTimes: Bool = false,
        probingEachId: Bool = false
    ) -> String {
        """
        CREATE OR REPLACE FUNCTION relay_complete(
            outcome_ids uuid[], outcome_owners uuid[], outcome_attempts integer[], outcome_states smallint[],
            outcome_results bytea[]\(recordingRunTimes ? ", outcome_run_times bigint[]" : "")
        ) RETURNS SETOF uuid LANGUAGE plpgsql AS $$
        DECLARE
            done uuid[];
            sequences text[];
            ready boolean;
        BEGIN
            PERFORM 1 FROM relay_sequences
            WHERE name IN (\(probingEachId ? probedSequences : arraySequences))
            ORDER BY name FOR UPDATE;
            PERFORM 1 FROM relay_operations WHERE id = ANY(outcome_ids) ORDER BY id FOR UPDATE;
            WITH ended AS (
                UPDATE relay_operations o
                SET state = i.state, result = i.result, finished_at = now(), owner = NULL, lease_until = NULL\(
                    recordingRunTimes ? ", run_time = NULLIF(i.run_time, 0)" : "")
                FROM unnest(
                    outcome_ids, outcome_owners, outcome_attempts, outcome_states, outcome_results\(
                    recordingRunTimes ? ", outcome_run_times" : "")
                ) AS i (id, owner, attempt, state, result\(recordingRunTimes ? ", run_time" : ""))
                WHERE o.id = i.id AND o.state = 2 AND o.owner = i.owner AND o.attempts = i.attempt
                RETURNING o.id, o.sequence
            )
            SELECT array_agg(ended.id), array_agg(ended.sequence) INTO done, sequences FROM ended;
            IF done IS NULL THEN
                RETURN;
            END IF;
            \(lookingForDependents ? "IF EXISTS (SELECT 1 FROM relay_dependencies WHERE dependency = ANY(done)) THEN" : "")
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
            \(lookingForDependents ? "END IF;" : "")
            \(markingOnline ? onlineAgain : "")
            PERFORM pg_notify('relay_finished', chunk.ids)
            FROM (
                SELECT string_agg(upper(id::text), ',') AS ids
                FROM unnest(done) WITH ORDINALITY AS ended (id, n) GROUP BY (n - 1) / 200
            ) AS chunk;
            UPDATE relay_sequences s SET running = s.running - c.n
            FROM (SELECT name, count(*)::integer AS n FROM unnest(sequences) AS name GROUP BY name) AS c
            WHERE s.name = c.name;
            RETURN QUERY SELECT unnest(done);
        END
        $$
        """
    }

    /// The statement of `relay_complete` that takes the ended operations' destinations off the offline ones: the
    /// operations waiting for them may be claimed again.
    private static let onlineAgain = """
        IF EXISTS (SELECT 1 FROM relay_destinations) THEN
                    WITH online AS (
                        DELETE FROM relay_destinations d USING relay_operations o
                        WHERE o.id = ANY(done) AND d.destination = o.destination
                        RETURNING 1
                    )
                    SELECT count(*) > 0 INTO ready FROM online;
                    IF ready THEN
                        PERFORM pg_notify('relay_ready', '');
                    END IF;
                END IF;
        """

    /// `relay_enqueue`: a commit that names no stored operation, in one call.
    ///
    /// It takes the commit's snapshot number under the counters' lock, as every enqueue does first; then, if none of
    /// the commit's ids is stored and all its sequences are registered, it adds the rows, their dependencies and
    /// start times, and announces the ready ones. Otherwise it writes nothing more and says so (`commit_written` is
    /// false): the caller goes on in the same transaction, with the same number, the way that reads what is stored.
    ///
    /// The version that names its `enqueuer` (schema version 7 on) keeps it for the transaction in `relay.origin`, for
    /// the event log: the process that enqueued announces its operations itself.
    static let enqueueFunction = enqueueFunction(namingEnqueuer: false)

    /// The text of `relay_enqueue`, with its first argument the process that enqueues when `namingEnqueuer`, the
    /// operations' destinations after their bodies when `withDestinations` (schema version 14 on), and its check that
    /// no id is stored made of one look-up of the primary key per id when `probingEachId` (schema version 19 on; see
    /// ``probingStatements``).
    static func enqueueFunction(
        namingEnqueuer: Bool, withDestinations: Bool = false, probingEachId: Bool = false
    ) -> String {
        """
        CREATE OR REPLACE FUNCTION relay_enqueue(
            \(namingEnqueuer ? "enqueuer uuid," : "")
            operation_ids uuid[], operation_sequences text[], operation_ordinals integer[],
            operation_priorities bigint[], operation_states smallint[], operation_blockers integer[],
            operation_run_anyway boolean[], operation_bodies bytea[],
            \(withDestinations ? "operation_destinations text[]," : "") link_dependencies uuid[],
            link_dependents uuid[], start_ids uuid[], start_times timestamptz[],
            OUT commit_snapshot bigint, OUT commit_written boolean
        ) LANGUAGE plpgsql AS $$
        BEGIN
            \(namingEnqueuer ? "PERFORM set_config('relay.origin', coalesce(enqueuer::text, ''), true);" : "")
            UPDATE relay_counters c SET snapshot = c.snapshot + 1 RETURNING c.snapshot INTO commit_snapshot;
            commit_written := NOT EXISTS (\(probingEachId ? probedIds : arrayIds))
                AND NOT EXISTS (
                    SELECT 1 FROM unnest(operation_sequences) AS named (name)
                    WHERE NOT EXISTS (SELECT 1 FROM relay_sequences s WHERE s.name = named.name));
            IF NOT commit_written THEN
                RETURN;
            END IF;
            INSERT INTO relay_operations
                (id, sequence, snapshot, ordinal, priority, state, blockers, run_anyway, body, available_at
                \(withDestinations ? ", destination" : ""))
            SELECT r.id, r.sequence, commit_snapshot, r.ordinal, r.priority, r.state, r.blockers, r.run_anyway,
                r.body, starts.at \(withDestinations ? ", r.destination" : "")
            FROM unnest(
                operation_ids, operation_sequences, operation_ordinals, operation_priorities, operation_states,
                operation_blockers, operation_run_anyway, operation_bodies
                \(withDestinations ? ", operation_destinations" : "")
            ) AS r (id, sequence, ordinal, priority, state, blockers, run_anyway, body \(withDestinations ? ", destination" : ""))
            LEFT JOIN unnest(start_ids, start_times) AS starts (id, at) ON starts.id = r.id;
            INSERT INTO relay_dependencies (dependency, dependent)
            SELECT * FROM unnest(link_dependencies, link_dependents);
            IF 1 = ANY(operation_states) THEN
                PERFORM pg_notify('relay_ready', '');
            END IF;
        END
        $$
        """
    }
}
