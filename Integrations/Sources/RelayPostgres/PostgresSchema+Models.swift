extension PostgresSchema {
    /// Schema version 11: the fleet's document.
    ///
    /// Each model and key-value is a row, with the number of the commit that last wrote it as its version; a removal
    /// leaves a row without a value, so that every process hears of it, until the event log's retention passes.
    ///
    /// Commits take their numbers under the counters' row lock, held until they end, so versions grow in the order
    /// that commits become visible: a process that has read every row up to a version never sees an earlier one
    /// appear later.
    static let modelStatements = [
        """
        CREATE TABLE relay_models (
            collection text NOT NULL,
            id text NOT NULL,
            encoded bytea,
            version bigint NOT NULL,
            changed_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (collection, id)
        )
        """,
        "CREATE INDEX relay_models_version ON relay_models (version)",
    ]

    /// Schema version 12: the document's relations by the models they name, both ways, so that a commit finds the
    /// relations its removals and erasures take with them at the cost of what it touches (S23).
    ///
    /// A relation is a row of `relay_models` too, in the document's collection of relations, which every process
    /// follows; this table holds a row for each one that lives, written in the same transaction.
    static let relationStatements = [
        """
        CREATE TABLE relay_relations (
            id text PRIMARY KEY,
            kind text NOT NULL,
            from_collection text NOT NULL,
            from_id text NOT NULL,
            to_collection text NOT NULL,
            to_id text NOT NULL
        )
        """,
        "CREATE INDEX relay_relations_from ON relay_relations (from_collection, from_id)",
        "CREATE INDEX relay_relations_to ON relay_relations (to_collection, to_id)",
    ]

    /// Schema version 13: the version up to which removals were pruned (a process that has read the document only
    /// up to an earlier version may have missed a removal, and reads the whole document again), and the document's
    /// rows indexed in the order that followers read them, one commit's many rows in pages.
    static let horizonStatements = [
        "DROP INDEX relay_models_version",
        "CREATE INDEX relay_models_version ON relay_models (version, collection, id)",
        """
        CREATE TABLE relay_model_horizon (
            singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
            pruned_through bigint NOT NULL DEFAULT 0
        )
        """,
        "INSERT INTO relay_model_horizon DEFAULT VALUES",
    ]
}
