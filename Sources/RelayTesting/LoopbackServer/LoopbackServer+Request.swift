import Foundation

extension LoopbackServer {
    /// A request the server received.
    public struct Request: Sendable, Hashable {
        /// The method, such as `GET`.
        public var method: String
        /// The path with its query, such as `/items?page=2`.
        public var target: String
        /// Header values by lowercased name.
        public var headers: [String: String]
        /// The body, after any chunked transfer coding is removed.
        public var body: Data
        /// The connection it arrived on, numbered from 1 in order of acceptance.
        public var connection: Int

        /// The path without its query.
        public var path: String { String(target.prefix { $0 != "?" }) }

        /// The value of a header, by case-insensitive name.
        ///
        /// - Parameter name: The header's name.
        /// - Returns: Its value, if the request had it.
        public func header(_ name: String) -> String? { headers[name.lowercased()] }

        /// The request's `Idempotency-Key`, which Relay sends with every attempt of an unsafe method.
        public var idempotencyKey: String? { header("Idempotency-Key") }
    }
}
