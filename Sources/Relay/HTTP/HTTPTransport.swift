import Foundation

/// Sends one HTTP request and returns its response; ``URLSessionTransport`` is the default.
///
/// A transport sends exactly the request it is given and never follows redirects: the ``HTTPExecutor`` follows them
/// itself, so that it can drop credentials on the way to another origin. It must end promptly, with
/// `CancellationError`, when its task is cancelled; per-attempt timeouts rely on that.
public protocol HTTPTransport: Sendable {
    /// Sends a request.
    ///
    /// - Parameters:
    ///   - request: The request, credentials included.
    ///   - file: Where to write the body instead of keeping it in memory, for downloads; the file is created or
    ///     replaced.
    ///   - onResponseHeaders: Called once, when the status and headers have arrived.
    /// - Returns: The response; its body is empty when it went to `file`.
    /// - Throws: ``HTTPTransportError`` for network failures, `CancellationError` when cancelled.
    func send(
        _ request: CallRequest,
        writingBodyTo file: URL?,
        onResponseHeaders: @escaping @Sendable () -> Void
    ) async throws -> HTTPTransportResponse
}
