import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A real HTTP/1.1 server on 127.0.0.1, on an ephemeral port, for tests that exercise HTTP calls end to end.
///
/// Script what it answers per path, including faults: any status, `Retry-After`, delays, a dropped connection, a
/// request that never gets an answer, and a port that goes down and comes back. It records every request, so tests
/// can count them and read their `Idempotency-Key` values.
///
/// ```swift
/// let server = try LoopbackServer()
/// server.script("/orders", [.retryAfter("1"), .json(#"{"id": 7}"#, status: 201)])
/// let response = try await point.execute(HTTPCall(method: .post, url: server.url("/orders")))
/// #expect(server.requests(to: "/orders").count == 2)
/// server.stop()
/// ```
///
/// The server runs on threads of its own with blocking sockets, outside Swift concurrency, so that it never competes
/// with the code under test for the cooperative pool; stop it when the test ends.
public final class LoopbackServer: Sendable {
    private struct State {
        var listener: Int32 = -1
        var running = false
        var connections: Set<Int32> = []
        var connectionCount = 0
        var scripts: [String: [Reply]] = [:]
        var defaults: [String: Reply] = [:]
        var fallback = Reply(status: 404)
        var requests: [Request] = []
        /// Requests received and not yet answered, and the most there ever were, by path.
        var inFlight: [String: Int] = [:]
        var mostInFlight: [String: Int] = [:]
        var requestWaiters = CountWaiters()
        var stalled: [DispatchSemaphore] = []
        /// While stopped, a socket bound to the port and not listening: clients are refused, and no server the system
        /// gives a port to meanwhile gets this one.
        var reservation: Int32 = -1
    }

    private let state = Mutex(State())
    private let acceptLoops = DispatchGroup()
    /// The port, fixed for the server's life, so that a restart comes back where clients expect it.
    public let port: Int

    /// Starts a server on 127.0.0.1 on a port the system picks.
    ///
    /// - Throws: `POSIXError` when the socket cannot be opened.
    public init() throws {
        let listener = try Self.listen(port: 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        start(listener)
    }

    deinit {
        stop()
        let reservation = state.withLock(\.reservation)
        if reservation >= 0 { close(reservation) }
    }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A URL on this server.
    ///
    /// - Parameter path: The path, with a leading slash and an optional query.
    /// - Returns: The URL.
    public func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    // MARK: - Scripting

    /// Queues replies for a path, answered in order; once they run out, the path's default answers.
    ///
    /// - Parameters:
    ///   - path: The path, without the query.
    ///   - replies: The replies, first request first.
    public func script(_ path: String, _ replies: [Reply]) {
        state.withLock { $0.scripts[path, default: []].append(contentsOf: replies) }
    }

    /// Sets what a path answers when its script is empty; unknown paths answer 404.
    ///
    /// - Parameters:
    ///   - path: The path, without the query.
    ///   - reply: The reply.
    public func setDefault(_ path: String, _ reply: Reply) {
        state.withLock { $0.defaults[path] = reply }
    }

    /// Lets every stalled or held request go: a stalled one gets its connection closed without an answer, a held one
    /// its answer.
    public func releaseStalled() {
        let stalled = state.withLock { state in
            defer { state.stalled = [] }
            return state.stalled
        }
        for semaphore in stalled { semaphore.signal() }
    }

    // MARK: - What arrived

    /// Every request received, in order of arrival.
    public var requests: [Request] { state.withLock(\.requests) }

    /// The requests received for one path.
    ///
    /// - Parameter path: The path, without the query.
    /// - Returns: Its requests, in order of arrival.
    public func requests(to path: String) -> [Request] { requests.filter { $0.path == path } }

    /// The `Idempotency-Key` values received, in order of arrival, one per request that carried one.
    public var idempotencyKeys: [String] { requests.compactMap { $0.header("Idempotency-Key") } }

    /// How many connections the server accepted.
    public var connectionCount: Int { state.withLock(\.connectionCount) }

    /// The most requests to `path` that the server held at once: received, and not yet answered.
    ///
    /// - Parameter path: The path, without its query.
    /// - Returns: The most at once; zero for a path never requested.
    public func mostInFlight(_ path: String) -> Int {
        state.withLock { $0.mostInFlight[path, default: 0] }
    }

    /// Returns once the server has received at least `count` requests since it started, or as soon as the waiting
    /// task is cancelled.
    ///
    /// - Parameter count: The number of requests to wait for.
    public func waitForRequests(_ count: Int) async {
        let id = state.withLock { $0.requestWaiters.makeID() }
        await CountWaiters.wait(
            park: { continuation in
                state.withLock { $0.requestWaiters.park(id, until: count, reached: $0.requests.count, continuation) }
            },
            cancel: { self.state.withLock { $0.requestWaiters.cancel(id) } }
        )
    }

    // MARK: - Up and down

    /// Whether the server accepts connections.
    public var isRunning: Bool { state.withLock(\.running) }

    /// Closes the port and every open connection; clients get connection refused until ``restart()``, and the port
    /// stays this server's meanwhile.
    public func stop() {
        let (listener, connections, stalled) = state.withLock { state in
            defer {
                state.running = false
                state.listener = -1
                state.stalled = []
            }
            return (state.listener, state.connections, state.stalled)
        }
        guard listener >= 0 else { return }
        // Shutting a listening socket down wakes the blocked accept.
        shutdown(listener, Int32(SHUT_RDWR))
        acceptLoops.wait()
        close(listener)
        let reservation = try? Self.bound(port: port)
        state.withLock { $0.reservation = reservation ?? -1 }
        for connection in connections { shutdown(connection, Int32(SHUT_RDWR)) }
        for semaphore in stalled { semaphore.signal() }
    }

    /// Opens the same port again after ``stop()``.
    ///
    /// - Throws: `POSIXError` when the port cannot be bound again.
    public func restart() throws {
        guard !isRunning else { return }
        let reservation = state.withLock { state in
            defer { state.reservation = -1 }
            return state.reservation
        }
        if reservation >= 0 { close(reservation) }
        start(try Self.listen(port: port))
    }

    // MARK: - Sockets

    private static func listen(port: Int) throws -> Int32 {
        let listener = try bound(port: port)
        guard startListening(listener) == 0 else {
            let code = errno
            close(listener)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        return listener
    }

    /// A socket bound to `port` on 127.0.0.1, or to one the system picks for 0.
    private static func bound(port: Int) throws -> Int32 {
        #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(descriptor)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        return descriptor
    }

    private static func startListening(_ listener: Int32) -> Int32 {
        #if canImport(Glibc)
            Glibc.listen(listener, 128)
        #else
            Darwin.listen(listener, 128)
        #endif
    }

    private func start(_ listener: Int32) {
        state.withLock { state in
            state.listener = listener
            state.running = true
        }
        acceptLoops.enter()
        Thread.detachNewThread { [self] in
            defer { acceptLoops.leave() }
            while true {
                let connection = accept(listener, nil, nil)
                if connection < 0 {
                    if errno == EINTR { continue }
                    return
                }
                let number = state.withLock { state -> Int? in
                    guard state.running else { return nil }
                    state.connections.insert(connection)
                    state.connectionCount += 1
                    return state.connectionCount
                }
                guard let number else {
                    close(connection)
                    return
                }
                Thread.detachNewThread { [self] in serve(connection, number: number) }
            }
        }
    }

    private func serve(_ connection: Int32, number: Int) {
        defer {
            state.withLock { _ = $0.connections.remove(connection) }
            close(connection)
        }
        var reader = RequestReader(socket: connection)
        while let (request, wantsClose) = reader.next(connection: number) {
            let (scripted, release) = record(request)
            let reply = scripted.answering(request)
            // A scripted slow peer: the delay is the fault being simulated, on the server's own thread, and tests never
            // rely on it to order their steps.
            if let delay = reply.delay {
                let seconds = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
                Thread.sleep(forTimeInterval: seconds)
            }
            release?.wait()
            // Before the answer goes out: a client that has it, and sends its next request, finds this one counted out.
            state.withLock { $0.inFlight[request.path, default: 1] -= 1 }
            switch reply.fault?.value {
            case .dropConnection, .stall:
                return
            case .cutBody(let bytes):
                let head = Self.encode(reply)
                let sent = head.count - reply.body.count + min(bytes, reply.body.count)
                _ =
                    Self.send(head.prefix(sent), to: connection)
                    && Self.sendZeros(min(reply.zeros, max(0, bytes - reply.body.count)), to: connection)
                return
            case nil:
                guard Self.send(Self.encode(reply), to: connection), Self.sendZeros(reply.zeros, to: connection),
                    !wantsClose
                else { return }
            }
        }
    }

    /// Records a request and picks its reply; a reply that waits for release is registered in the same critical
    /// section, so a test that saw the request can release it.
    private func record(_ request: Request) -> (Reply, release: DispatchSemaphore?) {
        let (reply, release, satisfied) = state.withLock { state in
            state.requests.append(request)
            let inFlight = state.inFlight[request.path, default: 0] + 1
            state.inFlight[request.path] = inFlight
            state.mostInFlight[request.path] = max(state.mostInFlight[request.path, default: 0], inFlight)
            let count = state.requests.count
            let satisfied = state.requestWaiters.takeSatisfied(by: count)
            let reply: Reply
            if var queue = state.scripts[request.path], !queue.isEmpty {
                reply = queue.removeFirst()
                state.scripts[request.path] = queue
            } else {
                reply = state.defaults[request.path] ?? state.fallback
            }
            var release: DispatchSemaphore?
            if reply.fault == .stall || reply.waitsForRelease {
                let semaphore = DispatchSemaphore(value: 0)
                // A stopped server has already released its stalled requests.
                if state.running { state.stalled.append(semaphore) } else { semaphore.signal() }
                release = semaphore
            }
            return (reply, release, satisfied)
        }
        for waiter in satisfied { waiter.resume() }
        return (reply, release)
    }

    private static func encode(_ reply: Reply) -> Data {
        var head = "HTTP/1.1 \(reply.status) \(reason(reply.status))\r\n"
        for (name, value) in reply.headers.sorted(by: { $0.key < $1.key })
        where name.lowercased() != "content-length" {
            head += "\(name): \(value)\r\n"
        }
        head += "Content-Length: \(reply.body.count + reply.zeros)\r\n\r\n"
        return Data(head.utf8) + reply.body
    }

    private static func sendZeros(_ count: Int, to connection: Int32) -> Bool {
        let chunk = Data(count: 64 * 1024)
        var left = count
        while left > 0 {
            guard send(left >= chunk.count ? chunk : chunk.prefix(left), to: connection) else { return false }
            left -= chunk.count
        }
        return true
    }

    private static func send(_ data: Data, to connection: Int32) -> Bool {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                #if canImport(Glibc)
                    let sent = Glibc.send(
                        connection, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                #else
                    let sent = Darwin.send(connection, buffer.baseAddress! + offset, buffer.count - offset, 0)
                #endif
                if sent < 0 && errno == EINTR { continue }
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 408: "Request Timeout"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
