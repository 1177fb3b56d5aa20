import Foundation

/// A serializable, reusable unit of work: usually an HTTP call, or any kind you register an executor for.
///
/// An operation is a value. Enqueueing it into a ``DataPoint`` makes it durable under the storage's policy and
/// schedules it on its ``CallSequence`` once its dependencies have finished.
///
/// ```swift
/// let fetch = CallOperation(kind: "fetch", payload: Data("user/42".utf8))
/// let notify = CallOperation(kind: "notify", dependencies: [fetch.id], priority: 5)
/// let handles = try await point.enqueue([fetch, notify])
/// ```
///
/// - Important: Enqueueing an id that is already known returns the existing handle and changes nothing (S1), as long
///   as the content is the same; different content under the same id is rejected with
///   ``RelayError/Code/conflictingOperation``.
public struct CallOperation: Codable, Sendable, Identifiable, Hashable {
    /// What happens to an operation when one of its dependencies finishes `failed` or `cancelled`.
    public enum DependencyFailurePolicy: String, Codable, Sendable, Hashable {
        /// The operation is cancelled too, with a reason naming the dependency. The default.
        case cancel
        /// The operation runs anyway once every dependency has finished, whatever the outcome.
        case runAnyway
    }

    /// The operation's identity, unique within a DataPoint.
    public var id: UUID
    /// Which executor runs the operation.
    public var kind: CallKind
    /// The sequence (lane) that runs the operation; ``CallSequence/Name/data`` by default.
    public var sequenceName: CallSequence.Name
    /// Operations, in any sequence, that must finish `completed` or `skipped` before this one starts.
    public var dependencies: Set<UUID>
    /// A soft hint among ready operations of one sequence: higher starts first.
    ///
    /// It never overrides dependencies.
    public var priority: Int
    /// The executor's input, stored as is.
    public var payload: Data
    /// Small key-value metadata that is stored with the operation.
    public var persistentUserInfo: [String: String]
    /// How failures are retried.
    public var retryPolicy: RetryPolicy
    /// What happens when a dependency fails or is cancelled.
    public var onDependencyFailure: DependencyFailurePolicy
    /// The snapshot (commit number) assigned at enqueue; `nil` before the operation is enqueued.
    public internal(set) var snapshot: UInt64?
    private(set) var explicitIdempotencyKey: String?

    /// A key that stays the same across attempts and restarts, so receivers can deduplicate.
    ///
    /// Unless set, it is derived from ``id``.
    public var idempotencyKey: String {
        get { explicitIdempotencyKey ?? Self.derivedIdempotencyKey(id) }
        set { explicitIdempotencyKey = newValue }
    }

    /// Creates an operation.
    ///
    /// - Parameters:
    ///   - id: The operation's identity; a new UUID by default.
    ///   - kind: Which executor runs it.
    ///   - sequenceName: The sequence that runs it.
    ///   - dependencies: Operations that must finish first.
    ///   - priority: A soft hint among ready operations of the same sequence; higher starts first.
    ///   - payload: The executor's input.
    ///   - persistentUserInfo: Small metadata stored with the operation.
    ///   - retryPolicy: How failures are retried.
    ///   - onDependencyFailure: What happens when a dependency fails or is cancelled.
    ///   - idempotencyKey: A stable deduplication key; derived from `id` when `nil`.
    public init(
        id: UUID = UUID(),
        kind: CallKind,
        sequenceName: CallSequence.Name = .data,
        dependencies: Set<UUID> = [],
        priority: Int = 0,
        payload: Data = Data(),
        persistentUserInfo: [String: String] = [:],
        retryPolicy: RetryPolicy = .default,
        onDependencyFailure: DependencyFailurePolicy = .cancel,
        idempotencyKey: String? = nil
    ) {
        self.id = id
        self.kind = kind
        self.sequenceName = sequenceName
        self.dependencies = dependencies
        self.priority = priority
        self.payload = payload
        self.persistentUserInfo = persistentUserInfo
        self.retryPolicy = retryPolicy
        self.onDependencyFailure = onDependencyFailure
        self.snapshot = nil
        self.explicitIdempotencyKey = idempotencyKey
    }

    static func derivedIdempotencyKey(_ id: UUID) -> String {
        id.uuidString.lowercased()
    }

    /// Whether two operations describe the same work, ignoring the snapshot that enqueueing assigns.
    func hasSameContent(as other: CallOperation) -> Bool {
        var lhs = self
        var rhs = other
        lhs.snapshot = nil
        rhs.snapshot = nil
        return lhs == rhs
    }
}
