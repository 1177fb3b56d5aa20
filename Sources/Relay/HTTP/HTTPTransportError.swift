import Foundation

/// A network failure, classified so that the executor knows whether the host is unreachable or the attempt failed.
public struct HTTPTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure.
    ///
    /// An extensible struct rather than an enum: a later release may tell more kinds of failure apart, and a `switch`
    /// over it has a `default`, so code written today keeps compiling. Compare with `==`, or match the kinds in a
    /// `switch`.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// Nothing accepted the connection: the host is down or refuses it.
        public static let cannotConnect = Kind("cannotConnect")
        /// The host name did not resolve.
        public static let dnsFailure = Kind("dnsFailure")
        /// The machine has no network.
        public static let notConnected = Kind("notConnected")
        /// The connection was lost before any response arrived.
        public static let connectionLostBeforeResponse = Kind("connectionLostBeforeResponse")
        /// The connection was lost after the response started.
        public static let connectionLost = Kind("connectionLost")
        /// Another failure, such as TLS or a malformed response.
        public static let other = Kind("other")

        /// The kind's name, as in `cannotConnect`.
        public var description: String { name }
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
        default: false
        }
    }

    /// The kind and message.
    public var description: String { message }
}
