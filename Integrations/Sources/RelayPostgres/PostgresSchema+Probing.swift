extension PostgresSchema {
    /// Schema version 19: `relay_enqueue`'s check that no id is stored, and `relay_complete`'s look-up of the ended
    /// operations' sequences, made of one look-up of the primary key per id, whatever the table's statistics.
    ///
    /// A function's statements are planned once a connection, with the statistics of that moment. Written as
    /// `id = ANY(ids)`, a plan made while `relay_operations` was small (a new database, before the first `ANALYZE`)
    /// read the whole table and compared each row with every id, and kept doing so as the table grew: in P13, more than
    /// half the checks of its 5,000 operations a database, 29 µs an operation. The look-up of each id alone, which a
    /// `LIMIT` keeps from being turned into a join, takes the primary key at any size.
    static let probingStatements = [
        enqueueFunction(namingEnqueuer: true, withDestinations: true, probingEachId: true),
        completeFunction(
            lookingForDependents: true, markingOnline: true, recordingRunTimes: true, probingEachId: true),
    ]

    /// Whether some of `operation_ids` is stored, one look-up of the primary key per id.
    static let probedIds = """
        SELECT 1 FROM unnest(operation_ids) AS named (id), LATERAL (
                        SELECT 1 FROM relay_operations o WHERE o.id = named.id LIMIT 1) AS stored
        """

    /// The same, as schema versions 5 to 18 wrote it.
    static let arrayIds = "SELECT 1 FROM relay_operations o WHERE o.id = ANY(operation_ids)"

    /// The sequences of `outcome_ids`, one look-up of the primary key per id.
    static let probedSequences = """
        SELECT stored.sequence FROM unnest(outcome_ids) AS ended (id), LATERAL (
                        SELECT o.sequence FROM relay_operations o WHERE o.id = ended.id LIMIT 1) AS stored
        """

    /// The same, as schema versions 3 to 18 wrote it.
    static let arraySequences = "SELECT sequence FROM relay_operations WHERE id = ANY(outcome_ids)"
}
