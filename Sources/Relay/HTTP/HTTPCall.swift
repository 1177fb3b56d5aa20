import Foundation

/// A serializable HTTP call: what to send, and how to judge the answer.
///
/// Wrap it in an operation with
/// ``CallOperation/http(_:id:sequenceName:dependencies:priority:retryPolicy:idempotencyKey:persistentUserInfo:)`` or
/// run it at once with ``DataPoint/execute(_:on:retryPolicy:deadline:)``. The call is stored with the operation, so it
/// holds no credentials: a ``RequestAuthorizer`` adds them at send time. Here `api` is the service's base URL:
///
/// ```swift
/// let call = HTTPCall(
///     method: .post,
///     url: api.appending(path: "orders"),
///     headers: ["Content-Type": "application/json"],
///     body: .data(Data(#"{"sku": "A-1"}"#.utf8)),
///     timeout: .milliseconds(300)
/// )
/// let response = try await point.execute(call)
/// ```
public struct HTTPCall: Codable, Sendable, Hashable {
    /// The method.
    public var method: Method
    /// The absolute `http` or `https` URL.
    public var url: URL
    /// Request headers, without credentials.
    ///
    /// `Authorization` and `Proxy-Authorization` are refused here: they would be stored.
    public var headers: [String: String]
    /// The body: none, bytes, or a file to upload.
    public var body: Body
    /// Status codes that complete the operation; 200–299 by default.
    public var acceptedStatusCodes: Set<Int>
    /// Status codes worth another attempt: 408, 429 and 500–599 by default.
    ///
    /// Any other status that is not accepted fails the operation.
    public var retryableStatusCodes: Set<Int>
    /// How long one attempt may take, from sending to the end of the body, the redirects it follows included; 60
    /// seconds by default.
    public var timeout: Duration
    /// For downloads: where the body goes.
    ///
    /// It is written beside the destination and moved into place atomically once the response is accepted.
    public var destination: URL?
    /// The longest `Retry-After` the call honours; five minutes by default.
    ///
    /// A longer one is cut to this.
    public var maximumRetryAfter: Duration
    /// How many redirects are followed before the redirect itself is the response; 10 by default.
    public var maximumRedirects: Int
    /// The collection that the response body, a JSON model with an `id`, is upserted into when the call completes, in
    /// the same commit as the completion (S21); `nil` keeps the response in the operation's result only.
    ///
    /// A collection that no type is registered as, or a body that is not a JSON object with an `id`, fails the call.
    public var responseCollection: String?

    /// The status codes that ``acceptedStatusCodes`` holds by default.
    public static let successStatusCodes = Set(200...299)
    /// The status codes that ``retryableStatusCodes`` holds by default.
    public static let transientStatusCodes = Set([408, 429]).union(500...599)

    /// Creates a call.
    ///
    /// - Parameters:
    ///   - method: The method; `GET` by default.
    ///   - url: The absolute `http` or `https` URL.
    ///   - headers: Request headers, without credentials.
    ///   - body: The body.
    ///   - acceptedStatusCodes: Status codes that complete the operation.
    ///   - retryableStatusCodes: Status codes worth another attempt.
    ///   - timeout: How long one attempt may take.
    ///   - destination: For downloads, where the body goes.
    ///   - maximumRetryAfter: The longest `Retry-After` honoured.
    ///   - maximumRedirects: How many redirects are followed.
    ///   - responseCollection: The collection the response body is upserted into on completion.
    public init(
        method: Method = .get,
        url: URL,
        headers: [String: String] = [:],
        body: Body = .none,
        acceptedStatusCodes: Set<Int> = HTTPCall.successStatusCodes,
        retryableStatusCodes: Set<Int> = HTTPCall.transientStatusCodes,
        timeout: Duration = .seconds(60),
        destination: URL? = nil,
        maximumRetryAfter: Duration = .seconds(300),
        maximumRedirects: Int = 10,
        responseCollection: String? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.acceptedStatusCodes = acceptedStatusCodes
        self.retryableStatusCodes = retryableStatusCodes
        self.timeout = timeout
        self.destination = destination
        self.maximumRetryAfter = maximumRetryAfter
        self.maximumRedirects = maximumRedirects
        self.responseCollection = responseCollection
    }

    /// Header names that carry credentials and are never stored, shown, or sent to another origin.
    static let credentialHeaders: Set<String> = ["authorization", "proxy-authorization"]

    /// Checks the call before it is stored.
    ///
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidURL`` or ``RelayError/Code/secretInCall``, or
    ///   ``RelayError/Code/invalidArgument`` for a timeout or bound that is not positive.
    public func validate() throws(RelayError) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else {
            throw RelayError(.invalidURL, "an HTTP call needs an absolute http or https URL with a host")
        }
        if let name = headers.keys.first(where: { Self.credentialHeaders.contains($0.lowercased()) }) {
            throw RelayError(
                .secretInCall,
                "the \(name) header would be stored with the call; supply it with a RequestAuthorizer instead"
            )
        }
        guard timeout > .zero, maximumRetryAfter >= .zero, maximumRedirects >= 0 else {
            throw RelayError(.invalidArgument, "an HTTP call's timeout must be positive and its bounds not negative")
        }
        if let destination, !destination.isFileURL {
            throw RelayError(.invalidArgument, "a download destination must be a file URL")
        }
    }

    /// The sequence a call runs on unless told otherwise: downloads, uploads, or data.
    var defaultSequence: CallSequence.Name {
        if destination != nil { return .downloads }
        if case .file = body { return .uploads }
        return .data
    }
}
