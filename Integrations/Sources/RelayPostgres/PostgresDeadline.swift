import Relay

/// Work on the database that must end by a deadline: a database that cannot be reached makes a client wait for a
/// connection for ever, and no call of Relay's may.
enum PostgresDeadline {
    /// The value of `body`, or ``RelayError/Code/storageFailure`` once `deadline` has passed on `clock`; `body` is
    /// cancelled then, and this returns once it has ended.
    static func run<Value: Sendable>(
        _ what: String,
        within deadline: Duration,
        on clock: some Clock<Duration>,
        _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await run(what, within: deadline, sleeping: { try await clock.sleep(for: $0) }, body)
    }

    /// The value of `body`, or ``RelayError/Code/storageFailure`` once `sleep` has slept through `deadline`.
    static func run<Value: Sendable>(
        _ what: String,
        within deadline: Duration,
        sleeping sleep: @escaping @Sendable (Duration) async throws -> Void,
        _ body: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        try await withThrowingTaskGroup(of: Value?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await sleep(deadline)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw RelayError(.storageFailure, "\(what): the database did not answer within \(deadline)")
            }
            return value
        }
    }
}
