import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Relay
import ServiceLifecycle

/// Relay's HTTP transport on AsyncHTTPClient, for servers: pooled connections on SwiftNIO, request and response
/// bodies streamed in bounded memory.
///
/// ```swift
/// let transport = AsyncHTTPClientTransport()
/// point.register(HTTPExecutor(transport: transport), for: .http)
/// let group = ServiceGroup(services: [RelayService(point), transport], logger: logger)
/// ```
///
/// The transport keeps a client of its own that follows no redirect: ``Relay/HTTPExecutor`` follows them itself,
/// dropping credentials on the way to another origin. Shut it down once nothing sends through it any more, with
/// ``shutdown()``, or run it as a service after the services that send through it: it shuts its client down at
/// graceful shutdown. An attempt's timeout and a cancel end a request by cancelling its task, which ends it at once.
public final class AsyncHTTPClientTransport: HTTPTransport, Service {
    private let client: HTTPClient
    /// How much of a body is read or written at once.
    static let chunkSize = 64 << 10

    /// Creates a transport with a client of its own.
    ///
    /// - Parameter configuration: The client's configuration. Its redirect configuration is replaced with one that
    ///   follows none, and it does not retry a connection that fails: Relay retries the attempt, and a host that
    ///   refuses connections is offline at once (a retrying client would wait out its connect timeout first).
    public init(configuration: HTTPClient.Configuration = HTTPClient.Configuration()) {
        var configuration = configuration
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// Shuts the client down; requests sent afterwards fail.
    ///
    /// - Throws: What the client throws as it shuts down.
    public func shutdown() async throws {
        try await client.shutdown()
    }

    /// Waits for graceful shutdown, then shuts the client down.
    ///
    /// - Throws: What the client throws as it shuts down.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Sends one request and returns its response, its body written to `file` when one is given.
    ///
    /// - Parameters:
    ///   - request: The request, credentials included.
    ///   - file: Where to write the body, for downloads; created or replaced, readable by its owner only.
    ///   - onResponseHeaders: Called once the status and headers have arrived.
    /// - Returns: The response.
    /// - Throws: ``Relay/HTTPTransportError`` for network failures; `CancellationError` when cancelled.
    public func send(
        _ request: CallRequest,
        writingBodyTo file: URL?,
        onResponseHeaders: @escaping @Sendable () -> Void
    ) async throws -> HTTPTransportResponse {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        let bytesSent: Int
        switch request.body {
        case .none:
            bytesSent = 0
        case .data(let data):
            outgoing.body = .bytes(ByteBuffer(bytes: data))
            bytesSent = data.count
        case .file(let url):
            let size = try Self.size(of: url)
            outgoing.body = .stream(FileChunks(url: url), length: .known(Int64(size)))
            bytesSent = size
        }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(outgoing, deadline: .distantFuture)
        } catch {
            throw Self.failure(error, responded: false)
        }
        onResponseHeaders()
        var headers: [String: String] = [:]
        for (name, value) in response.headers {
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        var received = 0
        var body = Data()
        do {
            if let file {
                let output = try Self.create(file)
                defer { try? output.close() }
                for try await chunk in response.body {
                    received += chunk.readableBytes
                    try chunk.withUnsafeReadableBytes { try output.write(contentsOf: $0) }
                }
            } else {
                for try await chunk in response.body {
                    received += chunk.readableBytes
                    body.append(contentsOf: chunk.readableBytesView)
                }
            }
        } catch let error as HTTPTransportError {
            throw error
        } catch {
            throw Self.failure(error, responded: true)
        }
        return HTTPTransportResponse(
            status: Int(response.status.code), headers: headers, body: body, bytesSent: bytesSent,
            bytesReceived: received)
    }

    private static func size(of url: URL) throws -> Int {
        guard let size = try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int else {
            throw HTTPTransportError(.other, "the upload file \(url.lastPathComponent) cannot be read")
        }
        return size
    }

    private static func create(_ url: URL) throws -> FileHandle {
        guard
            FileManager.default.createFile(atPath: url.path, contents: nil, attributes: [.posixPermissions: 0o600]),
            let handle = try? FileHandle(forWritingTo: url)
        else {
            throw HTTPTransportError(.other, "cannot create \(url.lastPathComponent) for a download")
        }
        return handle
    }

    /// What a failure of the client means to Relay: a cancel, a host that cannot be reached, or a lost connection.
    static func failure(_ error: any Error, responded: Bool) -> any Error {
        if error is CancellationError { return error }
        if let error = error as? HTTPClientError {
            switch error {
            case .cancelled, .deadlineExceeded:
                return CancellationError()
            case .connectTimeout, .getConnectionFromPoolTimeout:
                return HTTPTransportError(.cannotConnect, "cannot connect to the host: \(error)")
            case .remoteConnectionClosed:
                return responded
                    ? HTTPTransportError(.connectionLost, "the connection was lost during the response")
                    : HTTPTransportError(.connectionLostBeforeResponse, "the connection was lost before a response")
            default:
                return HTTPTransportError(.other, "\(error)")
            }
        }
        if error is NIOConnectionError || error is IOError || error is ChannelError {
            return responded
                ? HTTPTransportError(.connectionLost, "the connection was lost during the response: \(error)")
                : HTTPTransportError(.cannotConnect, "cannot connect to the host: \(error)")
        }
        return HTTPTransportError(.other, "\(error)")
    }
}

/// A file's bytes, read a chunk at a time as the upload asks for them.
private struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let url: URL

    struct AsyncIterator: AsyncIteratorProtocol {
        let handle: FileHandle?

        mutating func next() async throws -> ByteBuffer? {
            guard let handle else { throw HTTPTransportError(.other, "the upload file cannot be read") }
            guard let data = try handle.read(upToCount: AsyncHTTPClientTransport.chunkSize), !data.isEmpty else {
                try? handle.close()
                return nil
            }
            return ByteBuffer(bytes: data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(handle: try? FileHandle(forReadingFrom: url))
    }
}
