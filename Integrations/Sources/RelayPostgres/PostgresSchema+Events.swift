extension PostgresSchema {
    /// The fleet's event log: what happened to each operation, written by triggers in the transaction that made it
    /// happen, so that every process can follow what the others did.
    ///
    /// It also moves `relay_enqueue` to the version that names the process that enqueues.
    ///
    /// `kind` is 0 for an operation enqueued, 2 for a claim that starts an attempt, and the terminal state (3 to 6) for
    /// one that ended. `origin` is the process whose DataPoint announced the event itself (the claimer of a start,
    /// the owner that recorded an outcome, the process that enqueued), and `NULL` when no DataPoint did: every process
    /// then announces it. `tx` is the writing transaction's id: a follower reads only what transactions older than
    /// every running one wrote, in `(tx, position)` order, so that nothing that commits late is skipped.
    static let eventStatements = [
        """
        DROP FUNCTION relay_enqueue(
            uuid[], text[], integer[], bigint[], smallint[], integer[], boolean[], bytea[], uuid[], uuid[], uuid[],
            timestamptz[])
        """,
        enqueueFunction(namingEnqueuer: true),
        """
        CREATE TABLE relay_events (
            position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
            at timestamptz NOT NULL DEFAULT clock_timestamp(),
            origin uuid,
            operation uuid NOT NULL,
            sequence text NOT NULL,
            kind smallint NOT NULL,
            attempts integer NOT NULL,
            snapshot bigint NOT NULL,
            enqueued_at timestamptz NOT NULL,
            started_at timestamptz,
            finished_at timestamptz,
            result bytea
        )
        """,
        "CREATE INDEX relay_events_order ON relay_events (tx, position)",
        "CREATE INDEX relay_events_at ON relay_events (at)",
        logInsertsFunction(copyingResults: true),
        logUpdatesFunction(copyingResults: true),
        """
        CREATE TRIGGER relay_operations_inserted AFTER INSERT ON relay_operations
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_log_inserts()
        """,
        """
        CREATE TRIGGER relay_operations_updated AFTER UPDATE ON relay_operations
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_log_updates()
        """,
    ]

    /// Schema version 9: the log no longer copies outcomes, which may be large responses; a follower reads a failure
    /// or a cancellation from the operation's row.
    static let eventsWithoutResults = [
        logInsertsFunction(copyingResults: false), logUpdatesFunction(copyingResults: false),
    ]

    /// `relay_log_inserts`: an enqueued event for each operation added, and an ended one for each added ended.
    static func logInsertsFunction(copyingResults: Bool) -> String {
        """
        CREATE OR REPLACE FUNCTION relay_log_inserts() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO relay_events (
                origin, operation, sequence, kind, attempts, snapshot, enqueued_at, started_at, finished_at, result)
            SELECT CASE WHEN kind = 0 THEN nullif(current_setting('relay.origin', true), '')::uuid END, id, sequence,
                kind, attempts, snapshot, enqueued_at, started_at, finished_at, \(copyingResults ? "result" : "NULL")
            FROM (
                SELECT n.*, 0 AS kind FROM new_rows n
                UNION ALL
                SELECT n.*, n.state AS kind FROM new_rows n WHERE n.state >= 3
            ) e ORDER BY snapshot, ordinal, kind;
            IF FOUND THEN
                PERFORM pg_notify('\(PostgresQueue.eventsChannel)', '');
            END IF;
            RETURN NULL;
        END $$
        """
    }

    /// `relay_log_updates`: a started event for each claim, an ended one for each operation that ended.
    static func logUpdatesFunction(copyingResults: Bool) -> String {
        """
        CREATE OR REPLACE FUNCTION relay_log_updates() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO relay_events (
                origin, operation, sequence, kind, attempts, snapshot, enqueued_at, started_at, finished_at, result)
            SELECT CASE WHEN n.state = 2 THEN n.owner ELSE o.owner END, n.id, n.sequence, n.state, n.attempts,
                n.snapshot, n.enqueued_at, n.started_at, n.finished_at, \(copyingResults ? "n.result" : "NULL")
            FROM new_rows n JOIN old_rows o ON o.id = n.id
            WHERE n.state <> o.state AND n.state >= 2
            ORDER BY n.snapshot, n.ordinal;
            IF FOUND THEN
                PERFORM pg_notify('\(PostgresQueue.eventsChannel)', '');
            END IF;
            RETURN NULL;
        END $$
        """
    }

    /// Schema version 15: the event log keeps one B-tree, the followers' order; its positions need no index of their
    /// own, and retention finds old events through a block range index, which an insert barely touches, since events
    /// are written in time order.
    static let leanEventStatements = [
        "ALTER TABLE relay_events DROP CONSTRAINT relay_events_pkey",
        "DROP INDEX relay_events_at",
        "CREATE INDEX relay_events_at ON relay_events USING brin (at)",
    ]

    /// Schema version 18: the log tells of suspensions, resumes, offline destinations and holds too.
    ///
    /// Kinds 7 (suspended) and 8 (resumed) name no operation, and their `sequence` is `NULL` for the whole fleet;
    /// the transaction that moves the count writes them. Kinds 9 (offline) and 10 (online) name a `destination` of the
    /// whole fleet; triggers on `relay_destinations` write them. Each has its `reason`. Kind 11 is a hold set
    /// (`held_until`) or released (`NULL`) on an operation that waits in the database, its context as the `reason`.
    static let sequenceEventStatements = [
        """
        ALTER TABLE relay_events ALTER COLUMN operation DROP NOT NULL, ALTER COLUMN sequence DROP NOT NULL,
            ALTER COLUMN attempts DROP NOT NULL, ALTER COLUMN snapshot DROP NOT NULL,
            ALTER COLUMN enqueued_at DROP NOT NULL, ADD COLUMN reason text, ADD COLUMN destination text,
            ADD COLUMN held_until timestamptz
        """,
        """
        CREATE FUNCTION relay_log_offline() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO relay_events (kind, destination, reason)
            SELECT 9, destination, reason FROM new_rows ORDER BY destination;
            IF FOUND THEN
                PERFORM pg_notify('\(PostgresQueue.eventsChannel)', '');
            END IF;
            RETURN NULL;
        END $$
        """,
        // A destination is forgotten (`relay.forgetting` set for the transaction) once no operation waits for it;
        // otherwise one of its operations got an answer.
        """
        CREATE FUNCTION relay_log_online() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO relay_events (kind, destination, reason)
            SELECT 10, destination, CASE WHEN current_setting('relay.forgetting', true) = 'true'
                THEN 'no operation waits for it any more; the next one tries again' ELSE 'it answered' END
            FROM old_rows ORDER BY destination;
            IF FOUND THEN
                PERFORM pg_notify('\(PostgresQueue.eventsChannel)', '');
            END IF;
            RETURN NULL;
        END $$
        """,
        """
        CREATE TRIGGER relay_destinations_inserted AFTER INSERT ON relay_destinations
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_log_offline()
        """,
        """
        CREATE TRIGGER relay_destinations_deleted AFTER DELETE ON relay_destinations
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION relay_log_online()
        """,
    ]
}
