import Foundation

/// A response as a transport received it.
public struct HTTPTransportResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Response headers.
    public var headers: [String: String]
    /// The body, unless it was written to a file.
    public var body: Data
    /// Body bytes sent.
    public var bytesSent: Int
    /// Body bytes received.
    public var bytesReceived: Int

    /// Creates a response.
    ///
    /// - Parameters:
    ///   - status: The status code.
    ///   - headers: Response headers.
    ///   - body: The body.
    ///   - bytesSent: Body bytes sent.
    ///   - bytesReceived: Body bytes received.
    public init(status: Int, headers: [String: String], body: Data, bytesSent: Int, bytesReceived: Int) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
    }
}
