import Foundation

extension HTTPCall {
    /// An HTTP method.
    public struct Method: RawRepresentable, Codable, Sendable, Hashable, ExpressibleByStringLiteral,
        CustomStringConvertible
    {
        /// The method's name in upper case, such as `POST`.
        public let rawValue: String

        /// Creates a method from its name; it is upper-cased.
        ///
        /// - Parameter rawValue: The name.
        public init(rawValue: String) {
            self.rawValue = rawValue.uppercased()
        }

        /// Creates a method from a literal name.
        ///
        /// - Parameter value: The name.
        public init(stringLiteral value: String) {
            self.init(rawValue: value)
        }

        /// `GET`.
        public static let get = Method(rawValue: "GET")
        /// `HEAD`.
        public static let head = Method(rawValue: "HEAD")
        /// `POST`.
        public static let post = Method(rawValue: "POST")
        /// `PUT`.
        public static let put = Method(rawValue: "PUT")
        /// `PATCH`.
        public static let patch = Method(rawValue: "PATCH")
        /// `DELETE`.
        public static let delete = Method(rawValue: "DELETE")
        /// `OPTIONS`.
        public static let options = Method(rawValue: "OPTIONS")

        /// Whether the method changes state on the server, so that retries carry an `Idempotency-Key`.
        public var isUnsafe: Bool { ["POST", "PUT", "PATCH", "DELETE"].contains(rawValue) }

        /// The method's name.
        public var description: String { rawValue }
    }
}
