import Foundation

extension CallKind {
    /// HTTP calls, run by the ``HTTPExecutor`` that every DataPoint registers.
    public static let http: CallKind = "http"
    /// Where the pipeline looks for the executor of an HTTP call that must not go out without its authorizer: an
    /// ``HTTPExecutor`` with a ``RequestAuthorizer`` is registered under this kind too.
    static let authorizedHTTP: CallKind = "http, with its authorizer"
}

extension CallOperation {
    /// An operation that sends an HTTP call.
    ///
    /// ```swift
    /// let upload = try CallOperation.http(HTTPCall(method: .put, url: target, body: .file(report)))
    /// try await point.enqueue(upload)  // runs on the uploads sequence
    /// ```
    ///
    /// - Parameters:
    ///   - call: The call; checked before anything is stored.
    ///   - id: The operation's identity; by default a new random (version 4) UUID.
    ///   - sequenceName: The sequence; by default ``CallSequence/Name/downloads`` for calls with a destination,
    ///     ``CallSequence/Name/uploads`` for file bodies, and ``CallSequence/Name/data`` otherwise.
    ///   - dependencies: Operations that must finish first.
    ///   - priority: A soft hint among ready operations of the same sequence.
    ///   - retryPolicy: How retryable failures are retried.
    ///   - idempotencyKey: The key sent as `Idempotency-Key` on unsafe methods; derived from `id` when `nil`.
    ///   - persistentUserInfo: Strings stored with the operation, such as what a ``RequestAuthorizer`` needs to find
    ///     the credentials it applies; never credentials themselves.
    /// - Returns: The operation.
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidURL``, ``RelayError/Code/secretInCall`` or
    ///   ``RelayError/Code/invalidArgument`` when the call is not valid.
    public static func http(
        _ call: HTTPCall,
        id: UUID = RandomUUIDs.next(),
        sequenceName: CallSequence.Name? = nil,
        dependencies: Set<UUID> = [],
        priority: Int = 0,
        retryPolicy: RetryPolicy = .default,
        idempotencyKey: String? = nil,
        persistentUserInfo: [String: String] = [:]
    ) throws(RelayError) -> CallOperation {
        try call.validate()
        let operation = CallOperation(
            id: id,
            kind: .http,
            sequenceName: sequenceName ?? call.defaultSequence,
            dependencies: dependencies,
            priority: priority,
            payload: call.payload,
            persistentUserInfo: persistentUserInfo,
            retryPolicy: retryPolicy,
            idempotencyKey: idempotencyKey
        )
        operation.keepDecoded(call)
        return operation
    }
}

/// An HTTP operation's call as its attempts read it, kept beside the payload it was decoded from.
final class DecodedHTTPCall: Sendable {
    let call: HTTPCall

    init(_ call: HTTPCall) {
        self.call = call
    }
}

extension HTTPCall {
    /// The call that an HTTP operation sends.
    ///
    /// - Parameter operation: An operation made by
    ///   ``CallOperation/http(_:id:sequenceName:dependencies:priority:retryPolicy:idempotencyKey:persistentUserInfo:)``.
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidArgument`` when its payload is not an HTTP call.
    public init(operation: CallOperation) throws(RelayError) {
        try self.init(payload: operation.payload)
    }
}

extension CallOperation {
    /// The operations, with the HTTP calls among them marked as calls that never go out without an authorizer.
    static func requiringAuthorizer(_ operations: [CallOperation]) -> [CallOperation] {
        operations.map { operation in
            guard operation.kind == .http else { return operation }
            var marked = operation
            marked.payload = HTTPCall.requiringAuthorizer(operation.payload)
            // The mark changes how the call is sent, never the call.
            if let call = try? operation.decodedHTTPCall() { marked.keepDecoded(call) }
            return marked
        }
    }
}
