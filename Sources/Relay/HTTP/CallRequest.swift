import Foundation

/// One request as it is sent: built from an ``HTTPCall`` for each attempt, after the ``RequestAuthorizer`` ran.
///
/// Headers set with ``setSecretHeader(_:_:)`` are sent and never stored, shown in events, descriptions or errors, or
/// sent to another origin after a redirect. `Authorization` and `Proxy-Authorization` are always treated that way.
public struct CallRequest: Sendable, CustomStringConvertible {
    /// The method.
    public var method: HTTPCall.Method
    /// The URL.
    public var url: URL
    /// Headers by name, secret ones included.
    public private(set) var headers: [String: String]
    /// The body.
    public var body: HTTPCall.Body
    /// Lowercased names of the headers that are secret.
    public private(set) var secretHeaderNames: Set<String> = HTTPCall.credentialHeaders

    /// Creates a request.
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - url: The URL.
    ///   - headers: Headers that are not secret.
    ///   - body: The body.
    public init(method: HTTPCall.Method, url: URL, headers: [String: String] = [:], body: HTTPCall.Body = .none) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// Sets a header that is not secret, replacing any value under the same name in any case.
    ///
    /// - Parameters:
    ///   - name: The header's name.
    ///   - value: Its value, or `nil` to remove it.
    public mutating func setHeader(_ name: String, _ value: String?) {
        let lowered = name.lowercased()
        for key in headers.keys where key.lowercased() == lowered { headers[key] = nil }
        if let value { headers[name] = value }
    }

    /// Sets a secret header: sent with this request only, and never stored or shown.
    ///
    /// - Parameters:
    ///   - name: The header's name.
    ///   - value: The secret.
    public mutating func setSecretHeader(_ name: String, _ value: String) {
        setHeader(name, value)
        secretHeaderNames.insert(name.lowercased())
    }

    /// Headers as they may be shown: secret values replaced by `<redacted>`.
    public var redactedHeaders: [String: String] {
        var shown = headers
        for name in headers.keys where secretHeaderNames.contains(name.lowercased()) { shown[name] = "<redacted>" }
        return shown
    }

    /// The request without its secret headers, for a redirect to another origin.
    var withoutSecrets: CallRequest {
        var stripped = self
        for name in headers.keys where secretHeaderNames.contains(name.lowercased()) { stripped.headers[name] = nil }
        return stripped
    }

    /// The method and URL, without secrets or query.
    public var description: String { "\(method) \(url.redactedForDisplay)" }
}

/// The name ``CallRequest`` had before, when it clashed with the `HTTPRequest` of swift-http-types, which server
/// frameworks re-export.
@available(*, deprecated, renamed: "CallRequest")
public typealias HTTPRequest = CallRequest
