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
}
