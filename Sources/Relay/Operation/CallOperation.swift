import Foundation
import Synchronization

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
    ///
    /// A closed enum: these cases are the whole set, and a `switch` over them needs no `default`.
    public enum DependencyFailurePolicy: String, Codable, Sendable, Hashable {
        /// The operation is cancelled too, with a reason naming the dependency. The default.
        case cancel
        /// The operation runs anyway once every dependency has finished, whatever the outcome.
        case runAnyway
    }

    /// The operation's identity, unique within a DataPoint.
    public var id: UUID {
        get { storage.fields.id }
        set { change { $0.id = newValue } }
    }
    /// Which executor runs the operation.
    public var kind: CallKind {
        get { storage.fields.kind }
        set { change { $0.kind = newValue } }
    }
    /// The sequence (lane) that runs the operation; ``CallSequence/Name/data`` by default.
    public var sequenceName: CallSequence.Name {
        get { storage.fields.sequenceName }
        set { change { $0.sequenceName = newValue } }
    }
    /// Operations, in any sequence, that must finish `completed` or `skipped` before this one starts.
    public var dependencies: Set<UUID> {
        get { storage.fields.dependencies }
        set { change { $0.dependencies = newValue } }
    }
    /// A soft hint among ready operations of one sequence: higher starts first.
    ///
    /// It never overrides dependencies.
    public var priority: Int {
        get { storage.fields.priority }
        set { change { $0.priority = newValue } }
    }
    /// The executor's input, stored as is.
    public var payload: Data {
        get { storage.fields.payload }
        set { change { $0.payload = newValue } }
    }
    /// Small key-value metadata that is stored with the operation.
    public var persistentUserInfo: [String: String] {
        get { storage.fields.persistentUserInfo }
        set { change { $0.persistentUserInfo = newValue } }
    }
    /// How failures are retried.
    public var retryPolicy: RetryPolicy {
        get { storage.fields.retryPolicy }
        set { change { $0.retryPolicy = newValue } }
    }
    /// What happens when a dependency fails or is cancelled.
    public var onDependencyFailure: DependencyFailurePolicy {
        get { storage.fields.onDependencyFailure }
        set { change { $0.onDependencyFailure = newValue } }
    }
    /// The snapshot (commit number) assigned at enqueue; `nil` before the operation is enqueued.
    ///
    /// Kept beside the shared fields, so that enqueueing sets it without copying them.
    public internal(set) var snapshot: UInt64?
    var explicitIdempotencyKey: String? { storage.fields.explicitIdempotencyKey }

    /// A key that stays the same across attempts and restarts, so receivers can deduplicate.
    ///
    /// Unless set, it is derived from ``id``.
    public var idempotencyKey: String {
        get { explicitIdempotencyKey ?? Self.derivedIdempotencyKey(id) }
        set { change { $0.explicitIdempotencyKey = newValue } }
    }

    /// Every field but the snapshot, shared by copies of the operation: the engine copies an operation into its
    /// record, each handle and each attempt's context, and a shared reference makes each of those copies one retain
    /// rather than a dozen.
    private var storage: Storage

    private struct Fields: Hashable, Sendable {
        var id: UUID
        var kind: CallKind
        var sequenceName: CallSequence.Name
        var dependencies: Set<UUID>
        var priority: Int
        var payload: Data
        var persistentUserInfo: [String: String]
        var retryPolicy: RetryPolicy
        var onDependencyFailure: DependencyFailurePolicy
        var explicitIdempotencyKey: String?
    }

    /// Immutable but for the memo of its decoded call, set at most once, so that sharing it is safe; a change
    /// replaces it.
    private final class Storage: Sendable {
        let fields: Fields
        /// An HTTP operation's call, decoded once for every attempt and copy of the operation rather than once per
        /// attempt; memory only, never part of equality or of the stored form.
        let decodedCall = AtomicLazyReference<DecodedHTTPCall>()

        init(_ fields: Fields) {
            self.fields = fields
        }
    }

    private mutating func change(_ body: (inout Fields) -> Void) {
        var fields = storage.fields
        body(&fields)
        storage = Storage(fields)
    }

    /// The HTTP call in the payload, decoded on the first request and kept with the operation.
    ///
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidArgument`` when the payload is not an HTTP call.
    func decodedHTTPCall() throws(RelayError) -> HTTPCall {
        if let decoded = storage.decodedCall.load() { return decoded.call }
        let call = try HTTPCall(payload: payload)
        return storage.decodedCall.storeIfNil(DecodedHTTPCall(call)).call
    }

    /// Whether the payload's HTTP call has been decoded, or was kept when the operation was made.
    var hasDecodedHTTPCall: Bool { storage.decodedCall.load() != nil }

    /// Keeps `call` as the operation's decoded call: the call its payload was just encoded from.
    func keepDecoded(_ call: HTTPCall) {
        _ = storage.decodedCall.storeIfNil(DecodedHTTPCall(call))
    }

    /// Creates an operation.
    ///
    /// - Parameters:
    ///   - id: The operation's identity; by default a new random (version 4) UUID.
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
        id: UUID = RandomUUIDs.next(),
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
        storage = Storage(
            Fields(
                id: id,
                kind: kind,
                sequenceName: sequenceName,
                dependencies: dependencies,
                priority: priority,
                payload: payload,
                persistentUserInfo: persistentUserInfo,
                retryPolicy: retryPolicy,
                onDependencyFailure: onDependencyFailure,
                explicitIdempotencyKey: idempotencyKey
            )
        )
        snapshot = nil
    }

    /// A new operation that runs this one again: the same kind, sequence, priority, payload, metadata, retry policy
    /// and idempotency key, under a new id and with no dependencies.
    ///
    /// ``DataPoint/replay(_:)`` enqueues it for a failed or cancelled operation; enqueue it yourself to replay in a
    /// transaction, beside the models that record the replay.
    ///
    /// - Parameter id: The new operation's id.
    /// - Returns: The new operation.
    public func replayed(id: UUID = RandomUUIDs.next()) -> CallOperation {
        CallOperation(
            id: id, kind: kind, sequenceName: sequenceName, priority: priority, payload: payload,
            persistentUserInfo: persistentUserInfo, retryPolicy: retryPolicy, onDependencyFailure: onDependencyFailure,
            idempotencyKey: idempotencyKey)
    }

    static func derivedIdempotencyKey(_ id: UUID) -> String {
        id.uuidString.lowercased()
    }

    /// Whether two operations describe the same work, ignoring the snapshot that enqueueing assigns.
    func hasSameContent(as other: CallOperation) -> Bool {
        storage === other.storage || storage.fields == other.storage.fields
    }

    /// Whether an operation named again is the one known: the same content, but for what observers carry, which two
    /// enqueues of one operation may differ in.
    func isSameWork(as other: CallOperation) -> Bool {
        if hasSameContent(as: other) { return true }
        guard storage.fields.persistentUserInfo != other.storage.fields.persistentUserInfo else { return false }
        var mine = storage.fields
        var theirs = other.storage.fields
        mine.persistentUserInfo = userInfoWithoutCarrier
        theirs.persistentUserInfo = other.userInfoWithoutCarrier
        return mine == theirs
    }

    /// Whether two operations are equal, snapshot included.
    public static func == (lhs: CallOperation, rhs: CallOperation) -> Bool {
        lhs.snapshot == rhs.snapshot && lhs.hasSameContent(as: rhs)
    }

    /// Hashes every field, snapshot included.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.fields)
        hasher.combine(snapshot)
    }
}

extension CallOperation {
    private enum CodingKeys: String, CodingKey {
        case id, kind, sequenceName, dependencies, priority, payload, persistentUserInfo, retryPolicy
        case onDependencyFailure, snapshot, explicitIdempotencyKey
    }

    /// Decodes an operation from the keyed form ``encode(to:)`` writes.
    ///
    /// - Parameter decoder: The decoder.
    /// - Throws: `DecodingError` when a field is missing or malformed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(UUID.self, forKey: .id),
            kind: try container.decode(CallKind.self, forKey: .kind),
            sequenceName: try container.decode(CallSequence.Name.self, forKey: .sequenceName),
            dependencies: try container.decode(Set<UUID>.self, forKey: .dependencies),
            priority: try container.decode(Int.self, forKey: .priority),
            payload: try container.decode(Data.self, forKey: .payload),
            persistentUserInfo: try container.decode([String: String].self, forKey: .persistentUserInfo),
            retryPolicy: try container.decode(RetryPolicy.self, forKey: .retryPolicy),
            onDependencyFailure: try container.decode(DependencyFailurePolicy.self, forKey: .onDependencyFailure),
            idempotencyKey: try container.decodeIfPresent(String.self, forKey: .explicitIdempotencyKey)
        )
        snapshot = try container.decodeIfPresent(UInt64.self, forKey: .snapshot)
    }

    /// Encodes every field under its name.
    ///
    /// - Parameter encoder: The encoder.
    /// - Throws: What the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(sequenceName, forKey: .sequenceName)
        try container.encode(dependencies, forKey: .dependencies)
        try container.encode(priority, forKey: .priority)
        try container.encode(payload, forKey: .payload)
        try container.encode(persistentUserInfo, forKey: .persistentUserInfo)
        try container.encode(retryPolicy, forKey: .retryPolicy)
        try container.encode(onDependencyFailure, forKey: .onDependencyFailure)
        try container.encodeIfPresent(snapshot, forKey: .snapshot)
        try container.encodeIfPresent(explicitIdempotencyKey, forKey: .explicitIdempotencyKey)
    }
}
