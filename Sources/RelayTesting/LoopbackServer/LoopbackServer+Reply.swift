import Foundation

extension LoopbackServer {
    /// What the server does with one request: a response, possibly late, or a fault.
    public struct Reply: Sendable {
        /// A fault instead of a well-formed response.
        ///
        /// An open enum: a release may add faults, so a `switch` over it needs a `default`.
        public enum Fault: Sendable, Hashable {
            /// Reads the request, then closes the connection without answering.
            case dropConnection
            /// Reads the request and never answers, until the server stops or ``LoopbackServer/releaseStalled()``.
            case stall
            /// Sends the status, the headers with the whole body's `Content-Length`, and only the body's first bytes,
            /// then closes the connection: a response cut mid-body.
            case cutBody(after: Int)
        }

        /// The status code.
        public var status: Int
        /// Response headers; `Content-Length` is added.
        public var headers: [String: String]
        /// The response body.
        public var body: Data
        /// How long the server waits before answering, on the wall clock: it is the peer, not the code under test.
        public var delay: Duration?
        /// A fault that replaces the response.
        public var fault: Fault?
        /// Whether the server holds the answer until ``LoopbackServer/releaseStalled()``.
        public var waitsForRelease = false
        /// Zero bytes sent after ``body``, from a small buffer, so that a large download costs the server no memory.
        var zeros = 0

        /// Creates a reply.
        ///
        /// - Parameters:
        ///   - status: The status code; 200 by default.
        ///   - headers: Response headers.
        ///   - body: The body.
        ///   - delay: How long to wait before answering.
        public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data(), delay: Duration? = nil) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
        }

        /// A reply with a status and an optional UTF-8 body.
        ///
        /// - Parameters:
        ///   - status: The status code.
        ///   - body: The body text.
        /// - Returns: The reply.
        public static func status(_ status: Int, _ body: String = "") -> Reply {
            Reply(status: status, body: Data(body.utf8))
        }

        /// A JSON reply.
        ///
        /// - Parameters:
        ///   - json: The JSON text.
        ///   - status: The status code; 200 by default.
        /// - Returns: The reply, with `Content-Type: application/json`.
        public static func json(_ json: String, status: Int = 200) -> Reply {
            Reply(status: status, headers: ["Content-Type": "application/json"], body: Data(json.utf8))
        }

        /// A 200 whose body is `count` zero bytes, streamed: a download of any size that the server holds nothing of.
        ///
        /// - Parameter count: The body's size in bytes.
        /// - Returns: The reply.
        public static func zeros(count: Int) -> Reply {
            var reply = Reply(headers: ["Content-Type": "application/octet-stream"])
            reply.zeros = max(0, count)
            return reply
        }

        /// A reply that asks the client to come back later.
        ///
        /// - Parameters:
        ///   - retryAfter: The `Retry-After` value: delta-seconds or an HTTP date.
        ///   - status: 429 or 503, usually.
        /// - Returns: The reply.
        public static func retryAfter(_ retryAfter: String, status: Int = 503) -> Reply {
            Reply(status: status, headers: ["Retry-After": retryAfter])
        }

        /// A redirect.
        ///
        /// - Parameters:
        ///   - location: Where to go.
        ///   - status: The redirect status; 302 by default.
        /// - Returns: The reply.
        public static func redirect(to location: URL, status: Int = 302) -> Reply {
            Reply(status: status, headers: ["Location": location.absoluteString])
        }

        /// Closes the connection after reading the request, without a response.
        public static var dropConnection: Reply {
            var reply = Reply()
            reply.fault = .dropConnection
            return reply
        }

        /// Never answers, until the server stops or releases stalled requests.
        public static var stall: Reply {
            var reply = Reply()
            reply.fault = .stall
            return reply
        }

        /// The same reply, sent only once the test calls ``LoopbackServer/releaseStalled()``: a slow peer whose pace
        /// the test sets, for example around advancing a manual clock.
        ///
        /// - Returns: The held reply.
        public func heldUntilReleased() -> Reply {
            var reply = self
            reply.waitsForRelease = true
            return reply
        }

        /// The same reply, cut after the first `bytes` of its body: the connection closes there, although its
        /// `Content-Length` announced the whole body.
        ///
        /// - Parameter bytes: How much of the body is sent.
        /// - Returns: The cut reply.
        public func cut(after bytes: Int) -> Reply {
            var reply = self
            reply.fault = .cutBody(after: max(0, bytes))
            return reply
        }

        /// The same reply, sent after `delay`.
        ///
        /// - Parameter delay: How long to wait.
        /// - Returns: The delayed reply.
        public func delayed(by delay: Duration) -> Reply {
            var reply = self
            reply.delay = delay
            return reply
        }
    }
}
