import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default transport: URLSession, from FoundationNetworking on Linux.
///
/// One session serves every request. Relay drives it through a delegate, so that it sees the moment headers arrive,
/// counts bytes itself, streams downloads to disk, and never lets URLSession follow a redirect.
///
/// Every request runs as a data task, downloads included: the delegate writes each piece of a download's body, as it
/// arrives, to the file the executor names (beside the destination, mode 0600). FoundationNetworking's download
/// tasks are never used: they write to a world-readable file in the system's temporary folder, and a download task
/// whose redirect is not followed (as the executor never lets URLSession follow one) stops the process when the
/// redirect has a body, in `_ProtocolClient.urlProtocol(_:didLoad:)`.
///
/// A download asks for its body in parts, 8 MiB at a time unless configured otherwise, when its server serves byte
/// ranges: FoundationNetworking on Linux reads a body as fast as the network delivers it, whatever pace the disk
/// keeps, and cannot pause a transfer, so a part's size is what bounds the memory a download takes. The first request
/// asks for the first part; a server that answers with the whole body (200) is simply read to the end, as one that
/// ignores ranges does. Later parts carry `If-Range` with the first answer's strong `ETag`, or its `Last-Modified`,
/// so that a resource that changes midway fails the attempt (``HTTPTransportError/Kind/connectionLost``) rather than
/// mixing two versions; without either validator the download asks again for the whole body. The response reads as
/// one `200` of the whole body.
///
/// The session keeps no cookies and no stored credentials: a call sends the headers it names and those its
/// ``RequestAuthorizer`` adds, nothing that an earlier response left behind. A call is replayed after a restart, when
/// any cookie jar would be gone, so it must not depend on one; a cookie a call needs is one of its headers, marked
/// secret when it carries a session.
public final class URLSessionTransport: HTTPTransport {
    private let session: URLSession
    private let delegate: SessionDelegate
    /// Where the session's callbacks run; the operation queue holds it without retaining it.
    private let callbackQueue = DispatchQueue(label: "Relay.URLSessionTransport")
    /// The most bytes one request of a download asks for, or `nil` for the whole body at once.
    let downloadPartSize: Int?

    /// The transport that executors use unless given another: one session for the process.
    public static let shared = URLSessionTransport()

    /// Creates a transport.
    ///
    /// - Parameters:
    ///   - configuration: The session configuration. Its own timeouts are raised so that only Relay's per-attempt
    ///     timeout applies, its cache is turned off, so that every attempt reaches the server, and so are its cookie
    ///     and credential stores.
    ///   - maximumConnectionsPerHost: How many connections may be open to one host at once. Sequences' bunch sizes
    ///     already bound how many calls run, so the default, 64, is high enough that the session never queues
    ///     requests behind them, as URLSession's own default of 6 would.
    ///   - downloadPartSize: The most bytes a download asks for in one request when its server serves byte ranges
    ///     (see ``URLSessionTransport``); `nil` asks for the whole body at once. 8 MiB by default.
    public init(
        configuration: URLSessionConfiguration = .default,
        maximumConnectionsPerHost: Int = 64,
        downloadPartSize: Int? = 8 << 20
    ) {
        self.downloadPartSize = downloadPartSize.map { max(1, $0) }
        // A copy, so that the caller's configuration object is left as it was.
        let configuration = configuration.copy() as? URLSessionConfiguration ?? .default
        configuration.httpMaximumConnectionsPerHost = max(1, maximumConnectionsPerHost)
        configuration.timeoutIntervalForRequest = 7 * 24 * 3600
        configuration.timeoutIntervalForResource = 7 * 24 * 3600
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // Besides keeping calls self-contained, this spares FoundationNetworking from parsing every response header
        // line for cookies: about a tenth of the CPU of a request on loopback.
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpShouldSetCookies = false
        configuration.httpCookieStorage = nil
        configuration.urlCredentialStorage = nil
        delegate = SessionDelegate()
        // Callbacks stay serial, so a task's body and completion arrive in order; running them straight on a dispatch
        // queue rather than through OperationQueue's own scheduling saves a thread hop per callback.
        let callbacks = OperationQueue()
        callbacks.maxConcurrentOperationCount = 1
        callbacks.underlyingQueue = callbackQueue
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: callbacks)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Sends a request; see ``HTTPTransport/send(_:writingBodyTo:onResponseHeaders:)``.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - file: Where to write the body, for downloads.
    ///   - onResponseHeaders: Called when the headers arrive.
    /// - Returns: The response.
    /// - Throws: ``HTTPTransportError``, or `CancellationError` when cancelled.
    public func send(
        _ request: CallRequest,
        writingBodyTo file: URL?,
        onResponseHeaders: @escaping @Sendable () -> Void
    ) async throws -> HTTPTransportResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.timeoutInterval = 7 * 24 * 3600
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        guard let file else {
            return try await exchange(urlRequest, uploading: request.body, into: .memory, onResponseHeaders)
        }
        let sink = try BodyFile(url: file)
        defer { sink.close() }
        if let downloadPartSize, Self.downloadsInParts(request) {
            return try await download(urlRequest, inPartsOf: downloadPartSize, to: sink, onResponseHeaders)
        }
        return try await exchange(urlRequest, uploading: request.body, into: .written(sink), onResponseHeaders)
    }

    /// Sends one request through the session and waits for its response; a download's body goes to `body`'s file.
    func exchange(
        _ urlRequest: URLRequest,
        uploading upload: HTTPCall.Body,
        into body: Transfer.Body,
        _ onResponseHeaders: @escaping @Sendable () -> Void
    ) async throws -> HTTPTransportResponse {
        let task: URLSessionTask
        switch upload {
        case .none:
            task = session.dataTask(with: urlRequest)
        case .data(let data):
            task = session.uploadTask(with: urlRequest, from: data)
        case .file(let url):
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw HTTPTransportError(.other, "the upload file \(url.lastPathComponent) cannot be read")
            }
            task = session.uploadTask(with: urlRequest, fromFile: url)
        }
        let transfer = Transfer(body: body, onResponseHeaders: onResponseHeaders)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfer.continuation = continuation
                delegate.start(task, transfer)
            }
        } onCancel: {
            // The handler runs under the cancelled task's status lock, and `cancel()` waits for the session's work
            // queue, which may itself be waiting for that lock to resume the task after its last callback: a
            // deadlock. FoundationNetworking's own async methods cancel that way, which is why the transport uses
            // none of them. The cancel goes to another thread; the task's completion then resumes the caller.
            DispatchQueue.global().async { task.cancel() }
        }
    }
}

/// Where a download's body goes as it arrives: a file created, or emptied, with mode 0600, written with plain
/// `write(2)` calls on the delegate's queue, so that the queue keeps pace with the network.
final class BodyFile: Sendable {
    private let descriptor: Int32
    let url: URL

    init(url: URL) throws {
        self.url = url
        do {
            descriptor = try POSIXFile.open(url.path, O_WRONLY | O_CREAT | O_TRUNC)
        } catch {
            throw HTTPTransportError(.other, "cannot create \(url.lastPathComponent) for a download: \(error.message)")
        }
        // An existing file keeps its mode through O_CREAT; the body is for its owner alone.
        fchmod(descriptor, 0o600)
    }

    /// Writes all of `data`; returns why it could not.
    func write(_ data: Data) -> String? {
        do {
            try data.withUnsafeBytes { buffer in try POSIXFile.writeAll(descriptor, buffer, path: url.path) }
            return nil
        } catch {
            return (error as? RelayError)?.message ?? "\(error)"
        }
    }

    /// Empties the file and writes from its start again, for a download that starts over.
    func restart() throws {
        guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw HTTPTransportError(.other, "cannot empty \(url.lastPathComponent) for a download")
        }
    }

    func close() {
        POSIXFile.close(descriptor)
    }
}

/// One request in flight; only the session's delegate queue touches it after it starts.
final class Transfer: Sendable {
    /// Where the response body goes.
    enum Body: Sendable {
        case memory
        /// Written to a file by the delegate as it arrives: a download.
        case written(BodyFile)
    }

    struct State {
        var continuation: CheckedContinuation<HTTPTransportResponse, any Error>?
        var status = 0
        var headers: [String: String] = [:]
        var body = Data()
        var bytesSent = 0
        var bytesReceived = 0
        var failure: HTTPTransportError?
    }

    let body: Body
    let onResponseHeaders: @Sendable () -> Void
    let state = Mutex(State())

    init(body: Body, onResponseHeaders: @escaping @Sendable () -> Void) {
        self.body = body
        self.onResponseHeaders = onResponseHeaders
    }

    /// Notes the status and headers once; returns whether they are new, so the caller reports their arrival.
    func noteResponse(_ response: URLResponse?) -> Bool {
        guard let http = response as? HTTPURLResponse else { return false }
        let headers = SessionDelegate.headers(of: http)
        return state.withLock { state in
            guard state.status == 0 else { return false }
            state.status = http.statusCode
            state.headers = headers
            return true
        }
    }

    var continuation: CheckedContinuation<HTTPTransportResponse, any Error>? {
        get { state.withLock(\.continuation) }
        set { state.withLock { $0.continuation = newValue } }
    }
}

private final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let transfers = Mutex([Int: Transfer]())

    func start(_ task: URLSessionTask, _ transfer: Transfer) {
        transfers.withLock { $0[task.taskIdentifier] = transfer }
        task.resume()
    }

    private func transfer(_ task: URLSessionTask) -> Transfer? {
        transfers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        if let transfer = transfer(dataTask), transfer.noteResponse(response) { transfer.onResponseHeaders() }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let transfer = transfer(dataTask) else { return }
        if case .written(let sink) = transfer.body {
            let failure = sink.write(data)
            transfer.state.withLock { state in
                state.bytesReceived += data.count
                if let failure, state.failure == nil {
                    state.failure = HTTPTransportError(.other, failure)
                }
            }
            // Not on this queue: `cancel()` waits for the session's own queue.
            if failure != nil { DispatchQueue.global().async { dataTask.cancel() } }
        } else {
            transfer.state.withLock { state in
                state.body.append(data)
                state.bytesReceived += data.count
            }
        }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        transfer(task)?.state.withLock { $0.bytesSent = Int(totalBytesSent) }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // The executor follows redirects itself, deciding which headers may go along.
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        // The status and headers of a response that the delegate was not asked about: a redirect not followed.
        if transfer.noteResponse(task.response) { transfer.onResponseHeaders() }
        let (continuation, result) = transfer.state.withLock {
            state -> (CheckedContinuation<HTTPTransportResponse, any Error>?, Result<HTTPTransportResponse, any Error>)
            in
            defer { state.continuation = nil }
            if let failure = state.failure { return (state.continuation, .failure(failure)) }
            if let error {
                return (state.continuation, .failure(Self.classify(error, responded: state.status != 0)))
            }
            let response = HTTPTransportResponse(
                status: state.status,
                headers: state.headers,
                body: state.body,
                bytesSent: max(state.bytesSent, Int(task.countOfBytesSent)),
                bytesReceived: state.bytesReceived
            )
            return (state.continuation, .success(response))
        }
        continuation?.resume(with: result)
    }

    static func headers(of response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return headers
    }

    static func classify(_ error: any Error, responded: Bool) -> any Error {
        if error is CancellationError { return error }
        guard let error = error as? URLError else { return HTTPTransportError(.other, "\(error)") }
        switch error.code {
        case .cancelled:
            return CancellationError()
        case .cannotConnectToHost:
            return HTTPTransportError(.cannotConnect, "cannot connect to the host")
        case .cannotFindHost, .dnsLookupFailed:
            return HTTPTransportError(.dnsFailure, "the host name does not resolve")
        case .notConnectedToInternet:
            return HTTPTransportError(.notConnected, "the machine is not connected to a network")
        case .networkConnectionLost:
            return responded
                ? HTTPTransportError(.connectionLost, "the connection was lost during the response")
                : HTTPTransportError(.connectionLostBeforeResponse, "the connection was lost before a response")
        case .badServerResponse where !responded:
            // What libcurl reports when the server closes the connection without a byte of response.
            return HTTPTransportError(.connectionLostBeforeResponse, "the connection was lost before a response")
        case .timedOut:
            return HTTPTransportError(.other, "URLSession timed out")
        default:
            return HTTPTransportError(.other, "URLSession failed with code \(error.code.rawValue)")
        }
    }
}
