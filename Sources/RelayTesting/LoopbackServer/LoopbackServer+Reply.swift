import Foundation

extension LoopbackServer {
    /// What the server does with one request: a response, possibly late, or a fault.
    public struct Reply: Sendable {
        /// A fault instead of a well-formed response.
        ///
        /// An extensible struct rather than an enum: a release may add faults, and a new case of a public enum would
        /// break every exhaustive `switch` over it. Compare a fault with `==`.
        public struct Fault: Sendable, Hashable {
            /// The faults this release knows; the package's own code switches over them.
            package enum Value: Sendable, Hashable {
                case dropConnection
                case stall
                case cutBody(after: Int)
            }

            package let value: Value

            /// Reads the request, then closes the connection without answering.
            public static let dropConnection = Fault(value: .dropConnection)

            /// Reads the request and never answers, until the server stops or ``LoopbackServer/releaseStalled()``.
            public static let stall = Fault(value: .stall)

            /// Sends the status, the headers with the whole body's `Content-Length`, and only the body's first bytes,
            /// then closes the connection: a response cut mid-body.
            public static func cutBody(after count: Int) -> Fault { Fault(value: .cutBody(after: count)) }
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
        /// Whether the reply serves byte ranges, and the entity tag it gives its body then.
        var servesRanges = false
        var rangeTag: String?

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

        /// The same reply, serving byte ranges as a static file server does.
        ///
        /// A request for one range (`Range: bytes=FIRST-LAST`) gets `206` with that part of the body and its
        /// `Content-Range`, or `416` when the body has no such byte; an `If-Range` that names another tag gets the
        /// whole body. Every answer carries the tag as its `ETag`.
        ///
        /// - Parameter tag: The body's entity tag, quoted; a new tag stands for a changed body. `nil` gives none, and
        ///   then any `If-Range` gets the whole body.
        /// - Returns: The reply.
        public func servingRanges(tag: String? = "\"loopback\"") -> Reply {
            var reply = self
            reply.servesRanges = true
            reply.rangeTag = tag
            return reply
        }

        /// The answer to `request`: this reply, or the part of its body that a range asks for.
        func answering(_ request: Request) -> Reply {
            guard servesRanges else { return self }
            var whole = self
            whole.headers["ETag"] = rangeTag
            whole.headers["Accept-Ranges"] = "bytes"
            let length = body.count + zeros
            guard status == 200, let asked = request.header("Range"), asked.hasPrefix("bytes="),
                request.header("If-Range").map({ $0 == rangeTag }) ?? true
            else { return whole }
            let bounds = asked.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = Int(bounds[0]), first >= 0 else { return whole }
            var part = whole
            guard first < length else {
                part.status = 416
                part.headers["Content-Range"] = "bytes */\(length)"
                part.body = Data()
                part.zeros = 0
                return part
            }
            let last = min(Int(bounds[1]) ?? length - 1, length - 1)
            guard last >= first else { return whole }
            part.status = 206
            part.headers["Content-Range"] = "bytes \(first)-\(last)/\(length)"
            part.body = first < body.count ? body.subdata(in: first..<min(last + 1, body.count)) : Data()
            part.zeros = max(0, last + 1 - max(first, body.count))
            return part
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
