import Foundation

/// A snapshot of one operation's state, as the pipeline sees it at the moment of the query.
///
/// ```swift
/// if let status = try await point.status(of: id), case .pending(let waiting) = status.state {
///     print("waiting for", waiting)
/// }
/// ```
public struct CallStatus: Sendable, Hashable {
    /// Where the operation is in its life.
    ///
    /// A closed enum: these cases are the whole set, and a `switch` over them needs no `default`.
    public enum State: Sendable, Hashable {
        /// Not running yet; the associated value says what it waits for.
        case pending(Waiting)
        /// An attempt is running.
        case running(attempt: Int)
        /// Finished; this state never changes.
        case finished(CallResult)

        /// Whether the state is terminal.
        public var isTerminal: Bool {
            if case .finished = self { return true }
            return false
        }
    }

    /// What a pending operation waits for; when several apply, the first in this order is reported.
    ///
    /// An extensible struct rather than an enum: releases tell more reasons to wait apart (`authorizerNotRegistered`
    /// and `storeFailed` came so), and a new case of a public enum would break every exhaustive `switch` over it.
    /// Compare a reason with `==` (`waiting == .ready`), and read what it carries through its properties, `nil` for
    /// reasons that carry no such thing.
    public struct Waiting: Sendable, Hashable {
        /// The reasons this release tells apart, with what each carries; the package's own code switches over them.
        package enum Value: Sendable, Hashable {
            case sequenceNotRegistered(CallSequence.Name)
            case executorNotRegistered(CallKind)
            case authorizerNotRegistered
            case dependencies(Int)
            case held(until: Date)
            case retry(at: Date)
            case earlierCommit
            case offline(String)
            case suspended
            case storeFailed(String)
            case ready
        }

        package let value: Value

        /// Its sequence is not registered (only after a reload); it starts once the sequence is upserted.
        public static func sequenceNotRegistered(_ name: CallSequence.Name) -> Waiting {
            Waiting(value: .sequenceNotRegistered(name))
        }

        /// No executor is registered for its kind (only after a reload).
        public static func executorNotRegistered(_ kind: CallKind) -> Waiting {
            Waiting(value: .executorNotRegistered(kind))
        }

        /// An HTTP call enqueued where a ``RequestAuthorizer`` authorized calls waits for an ``HTTPExecutor`` with one:
        /// it is never sent without its credentials.
        public static let authorizerNotRegistered = Waiting(value: .authorizerNotRegistered)

        /// This many dependencies have not finished yet.
        public static func dependencies(_ count: Int) -> Waiting { Waiting(value: .dependencies(count)) }

        /// A hold keeps it until this date.
        public static func held(until date: Date) -> Waiting { Waiting(value: .held(until: date)) }

        /// A retry is scheduled for this date.
        public static func retry(at date: Date) -> Waiting { Waiting(value: .retry(at: date)) }

        /// Its sequence uses ``CallSequence/Algorithm/commitGraph`` and an earlier commit has not finished.
        public static let earlierCommit = Waiting(value: .earlierCommit)

        /// Its destination is offline, and it waits until a probe of the destination answers.
        ///
        /// It, or an operation of its sequence to the same destination, could not reach it. The reason names the
        /// destination and the failure.
        public static func offline(_ reason: String) -> Waiting { Waiting(value: .offline(reason)) }

        /// Its sequence or the whole DataPoint is suspended.
        public static let suspended = Waiting(value: .suspended)

        /// The store failed a write, so nothing more starts in this DataPoint.
        ///
        /// What runs could not be recorded. Open the store again once it is mended. The reason says what failed.
        public static func storeFailed(_ reason: String) -> Waiting { Waiting(value: .storeFailed(reason)) }

        /// It is ready and starts when its sequence has a free slot and the DataPoint runs.
        public static let ready = Waiting(value: .ready)

        /// The reason's name, without its values: `dependencies`, `held`, `storeFailed`, and so on.
        public var name: String {
            switch value {
            case .sequenceNotRegistered: "sequenceNotRegistered"
            case .executorNotRegistered: "executorNotRegistered"
            case .authorizerNotRegistered: "authorizerNotRegistered"
            case .dependencies: "dependencies"
            case .held: "held"
            case .retry: "retry"
            case .earlierCommit: "earlierCommit"
            case .offline: "offline"
            case .suspended: "suspended"
            case .storeFailed: "storeFailed"
            case .ready: "ready"
            }
        }

        /// How many dependencies have not finished, when that is what it waits for.
        public var unfinishedDependencies: Int? {
            if case .dependencies(let count) = value { count } else { nil }
        }

        /// The date it waits until: the end of a hold, or a scheduled retry.
        public var until: Date? {
            switch value {
            case .held(let date), .retry(let date): date
            default: nil
            }
        }

        /// Why its destination is offline, or what the store's failure was.
        public var reason: String? {
            switch value {
            case .offline(let reason), .storeFailed(let reason): reason
            default: nil
            }
        }
    }

    /// The operation's id.
    public let id: UUID
    /// The operation's sequence.
    public let sequenceName: CallSequence.Name
    /// The commit that enqueued it.
    public let snapshot: UInt64
    /// The state.
    public let state: State
    /// How many attempts have started.
    public let attempts: Int
    /// Timing so far.
    public let metrics: CallMetrics
    /// Why its last attempt that asked for a retry did not succeed, with the response, if any.
    ///
    /// It stays after the operation ends, so that a cancelled dead letter still says why its attempts failed; a
    /// failed operation's own ``CallFailure`` is in its ``state``.
    public let lastFailure: CallFailure?

    /// Creates a status, as a store that holds operations of other processes reads it (see
    /// ``SharedStorage/status(of:)``).
    ///
    /// - Parameters:
    ///   - id: The operation's id.
    ///   - sequenceName: Its sequence.
    ///   - snapshot: The commit that enqueued it.
    ///   - state: Where it stands.
    ///   - attempts: The attempts it has had.
    ///   - metrics: Its timing.
    ///   - lastFailure: The failure of its last attempt that asked for a retry, if known.
    public init(
        id: UUID, sequenceName: CallSequence.Name, snapshot: UInt64, state: State, attempts: Int, metrics: CallMetrics,
        lastFailure: CallFailure? = nil
    ) {
        self.id = id
        self.sequenceName = sequenceName
        self.snapshot = snapshot
        self.state = state
        self.attempts = attempts
        self.metrics = metrics
        self.lastFailure = lastFailure
    }
}

extension CallStatus: CustomStringConvertible {
    /// The id, sequence, commit, state and metrics, such as
    /// `5F0E… in data, commit 3: pending (ready); 0 attempts, ran 0 ns`.
    public var description: String {
        "\(id) in \(sequenceName), commit \(snapshot): \(state); \(metrics)"
    }
}

extension CallStatus.State: CustomStringConvertible {
    /// `pending (held until …)`, `running attempt 2`, `finished: completed (12 B)`.
    public var description: String {
        switch self {
        case .pending(let waiting): "pending (\(waiting))"
        case .running(let attempt): "running attempt \(attempt)"
        case .finished(let result): "finished: \(result)"
        }
    }
}

extension CallStatus.Waiting: CustomStringConvertible {
    /// What the operation waits for, in words.
    public var description: String {
        switch value {
        case .sequenceNotRegistered(let name): "sequence \(name) is not registered"
        case .executorNotRegistered(let kind): "no executor for kind \(kind)"
        case .authorizerNotRegistered: "waiting for an HTTP executor with a RequestAuthorizer"
        case .dependencies(1): "waiting for 1 dependency"
        case .dependencies(let count): "waiting for \(count) dependencies"
        case .held(let until): "held until \(until.readable)"
        case .retry(let date): "retry at \(date.readable)"
        case .earlierCommit: "waiting for an earlier commit"
        case .offline(let reason): "offline: \(reason)"
        case .suspended: "suspended"
        case .storeFailed(let reason): "the store failed, nothing more starts: \(reason)"
        case .ready: "ready"
        }
    }
}
