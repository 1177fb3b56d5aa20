import Foundation

/// A network failure, classified so that the executor knows whether the host is unreachable or the attempt failed.
public struct HTTPTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure.
    public enum Kind: Sendable, Hashable {
        /// Nothing accepted the connection: the host is down or refuses it.
        case cannotConnect
        /// The host name did not resolve.
        case dnsFailure
        /// The machine has no network.
        case notConnected
        /// The connection was lost before any response arrived.
        case connectionLostBeforeResponse
        /// The connection was lost after the response started.
        case connectionLost
        /// Another failure, such as TLS or a malformed response.
        case other
    }

    /// What kind of failure.
    public var kind: Kind
    /// What happened, for people; never contains secrets.
    public var message: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - kind: What kind of failure.
    ///   - message: What happened.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// Whether the failure means the host cannot be reached, so that the sequence suspends instead of retrying.
    public var isConnectivityFailure: Bool {
        switch kind {
        case .cannotConnect, .dnsFailure, .notConnected, .connectionLostBeforeResponse: true
        case .connectionLost, .other: false
        }
    }

    /// The kind and message.
    public var description: String { message }
}
