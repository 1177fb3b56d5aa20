import Relay

/// An operation's state in its row of `relay_operations`.
enum PostgresOperationState: Int16, Sendable, Hashable, Comparable {
    /// Waiting for dependencies: `blockers` counts those unfinished.
    case blocked = 0
    /// Ready to be claimed once its sequence has a free slot and `available_at` has passed.
    case pending = 1
    /// Claimed by `owner` for attempt `attempts`, until `lease_until`.
    case running = 2
    case completed = 3
    case skipped = 4
    case failed = 5
    case cancelled = 6

    /// Whether the state is terminal.
    var isTerminal: Bool { self >= .completed }

    /// Whether a dependent of an operation in this state may run: it finished `completed` or `skipped`.
    var satisfies: Bool { self == .completed || self == .skipped }

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension PostgresOperationState {
    /// The state a query of operations names: waiting for dependencies is pending, as a DataPoint counts it.
    var queryState: OperationQuery.State {
        switch self {
        case .blocked, .pending: .pending
        case .running: .running
        case .completed: .completed
        case .skipped: .skipped
        case .failed: .failed
        case .cancelled: .cancelled
        }
    }
}

extension OperationQuery.State {
    /// The states the database stores for it: a pending operation may wait for its dependencies too.
    var storedStates: [PostgresOperationState] {
        switch self {
        case .pending: [.blocked, .pending]
        case .running: [.running]
        case .completed: [.completed]
        case .skipped: [.skipped]
        case .failed: [.failed]
        case .cancelled: [.cancelled]
        }
    }
}
