import Foundation

/// Why an operation failed.
public struct CallFailure: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What ended the operation; new causes may be added without breaking the API.
    public struct Cause: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The cause's name: `executorFailed`, `retriesExhausted`, `offlineTooLong` or `unrecorded`.
        public let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// The executor returned ``CallOutcome/failed(reason:)``, as an HTTP call does for a status that is not
        /// retried.
        public static let executorFailed = Cause("executorFailed")
        /// The retry policy gave up: its ``RetryPolicy/maximumAttempts`` ran out, or the next attempt would start
        /// after its ``RetryPolicy/maximumElapsed``.
        public static let retriesExhausted = Cause("retriesExhausted")
        /// The operation's destination stayed offline past its retry policy's ``RetryPolicy/maximumElapsed``,
        /// counted from its first attempt.
        public static let offlineTooLong = Cause("offlineTooLong")
        /// A store written before causes were kept recorded the failure.
        public static let unrecorded = Cause("unrecorded")

        /// The cause's name.
        public var description: String { name }

        /// Decodes a cause from its name.
        ///
        /// - Parameter decoder: The decoder.
        /// - Throws: When the value is not a string.
        public init(from decoder: any Decoder) throws {
            name = try decoder.singleValueContainer().decode(String.self)
        }

        /// Encodes the cause as its name.
        ///
        /// - Parameter encoder: The encoder.
        /// - Throws: What the encoder throws.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(name)
        }

        /// The cause of a stored name; an unknown name reads as ``unrecorded``.
        init(stored name: String) {
            self.name =
                [Self.executorFailed, .retriesExhausted, .offlineTooLong].first { $0.name == name }?.name
                ?? Self.unrecorded.name
        }
    }

    /// The last reason the executor gave, or the description of the error it threw.
    public let reason: String
    /// How many attempts ran.
    public let attempts: Int
    /// What ended the operation: match on it rather than on ``reason``.
    ///
    /// ```swift
    /// if case .failed(let failure) = try await handle.outcome, failure.cause == .offlineTooLong {
    ///     showBanner("The server could not be reached")
    /// }
    /// ```
    public let cause: Cause
    /// The last attempt's response, when its executor reported one, as an HTTP call's does.
    ///
    /// Decode the server's error from it; its body is cut to ``maximumResponseBody`` bytes.
    ///
    /// ```swift
    /// if case .failed(let failure) = try await handle.outcome, let response = failure.response {
    ///     let problem = try response.decode(Problem.self)
    /// }
    /// ```
    public let response: CallResponse?

    /// The most bytes of a response body a failure keeps, and stores: 64 KiB.
    public static let maximumResponseBody = 64 * 1024

    /// Creates a failure description.
    ///
    /// - Parameters:
    ///   - reason: The last reason given.
    ///   - attempts: How many attempts ran.
    ///   - cause: What ended the operation.
    ///   - response: The last attempt's response; its body is cut to ``maximumResponseBody`` bytes.
    public init(reason: String, attempts: Int, cause: Cause = .executorFailed, response: CallResponse? = nil) {
        self.reason = reason
        self.attempts = attempts
        self.cause = cause
        var response = response
        if let body = response?.body, body.count > Self.maximumResponseBody {
            response?.body = body.prefix(Self.maximumResponseBody)
        }
        self.response = response
    }

    private enum CodingKeys: String, CodingKey {
        case reason, attempts, cause, response
    }

    /// Decodes a failure; one encoded before causes were kept has the cause ``Cause/unrecorded``.
    ///
    /// - Parameter decoder: The decoder.
    /// - Throws: When a field is missing or malformed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            reason: try container.decode(String.self, forKey: .reason),
            attempts: try container.decode(Int.self, forKey: .attempts),
            cause: try container.decodeIfPresent(Cause.self, forKey: .cause) ?? .unrecorded,
            response: try container.decodeIfPresent(CallResponse.self, forKey: .response))
    }

    /// The reason and the number of attempts.
    public var description: String { "\(reason) (after \(attempts) attempt\(attempts == 1 ? "" : "s"))" }
}
