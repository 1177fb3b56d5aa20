import Foundation

/// Applies credentials to each request when it is sent, so that they are never stored with the call.
///
/// ```swift
/// struct BearerToken: RequestAuthorizer {
///     let tokens: TokenStore
///     func authorize(_ request: inout CallRequest, for operation: CallOperation) async throws {
///         request.setSecretHeader("Authorization", "Bearer \(try await tokens.current())")
///     }
/// }
/// ```
///
/// It runs before every attempt. A redirect on the same origin keeps the credentials it set; one to another origin is
/// sent without the secret headers.
public protocol RequestAuthorizer: Sendable {
    /// Adds credentials to a request that is about to be sent.
    ///
    /// - Parameters:
    ///   - request: The request; set credentials with ``CallRequest/setSecretHeader(_:_:)``.
    ///   - operation: The operation the request belongs to.
    /// - Throws: Any error; the attempt fails and is retried under the operation's retry policy.
    func authorize(_ request: inout CallRequest, for operation: CallOperation) async throws
}
