extension PostgresSchema {
    /// Schema version 17: how long each finished operation's attempts ran, all together, in nanoseconds, which the
    /// process that ran it reports with its outcome (`NULL` for operations that finished before, or that no attempt
    /// ended: cancelled while waiting, failed while offline), for the fleet's metrics.
    ///
    /// `relay_complete` gains the run times as an argument of its own, beside the version without them, which a
    /// process of the version before, still running while the fleet moves on, goes on calling.
    static let runTimeStatements = [
        "ALTER TABLE relay_operations ADD COLUMN run_time bigint",
        completeFunction(lookingForDependents: true, markingOnline: true, recordingRunTimes: true),
    ]
}
