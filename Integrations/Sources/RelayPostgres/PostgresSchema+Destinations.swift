extension PostgresSchema {
    /// Schema version 14: offline destinations, kept for the whole fleet.
    ///
    /// Each operation keeps its destination (``Relay/CallOperation/destination``). A destination that did not answer
    /// has a row in `relay_destinations` until one of its operations gets an answer: no process claims its operations
    /// meanwhile, but for one at a time at its probe time, whose attempt is the probe; `probes` counts the probes that
    /// found it offline still, which space the next ones out. `fail_after` is when an operation given back for its
    /// destination fails, by its retry policy's `maximumElapsed` since its first attempt.
    static let destinationStatements = [
        "ALTER TABLE relay_operations ADD COLUMN destination text, ADD COLUMN fail_after timestamptz",
        """
        CREATE TABLE relay_destinations (
            destination text PRIMARY KEY,
            reason text NOT NULL,
            since timestamptz NOT NULL DEFAULT now(),
            probe_at timestamptz NOT NULL,
            probes integer NOT NULL DEFAULT 0,
            prober uuid
        )
        """,
        // Only operations with a destination: the others cost an enqueue no entry.
        """
        CREATE INDEX relay_operations_destination ON relay_operations (destination)
        WHERE state = 1 AND destination IS NOT NULL
        """,
        """
        DROP FUNCTION relay_enqueue(
            uuid, uuid[], text[], integer[], bigint[], smallint[], integer[], boolean[], bytea[], uuid[], uuid[], uuid[],
            timestamptz[])
        """,
        enqueueFunction(namingEnqueuer: true, withDestinations: true),
        completeFunction(lookingForDependents: true, markingOnline: true),
    ]
}
