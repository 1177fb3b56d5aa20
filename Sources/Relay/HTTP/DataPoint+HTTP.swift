import Foundation

extension DataPoint {
    /// Enqueues an HTTP call as one operation and waits for its response.
    ///
    /// ```swift
    /// let response = try await point.execute(HTTPCall(url: URL(string: "https://api.example.com/health")!))
    /// print(response.status, response.rawString)
    /// ```
    ///
    /// - Parameter call: The call.
    /// - Returns: The accepted response.
    /// - Throws: ``RelayError``: the call's validation errors, ``RelayError/Code/operationFailed`` when the call
    ///   fails for good (a status that is neither accepted nor retryable, or retries used up), and the errors of
    ///   ``execute(_:)-(CallOperation)``.
    public nonisolated func execute(_ call: HTTPCall) async throws -> CallResponse {
        try await enqueue(try CallOperation.http(call)).response
    }

    /// Enqueues an HTTP call, waits for its response, and decodes the JSON body.
    ///
    /// ```swift
    /// let user = try await point.execute(HTTPCall(url: usersURL.appending(path: "42")), as: User.self)
    /// ```
    ///
    /// - Parameters:
    ///   - call: The call.
    ///   - type: The type of the body.
    ///   - decoder: The decoder; a default `JSONDecoder` unless given.
    /// - Returns: The decoded body.
    /// - Throws: The errors of ``execute(_:)-(HTTPCall)``, and ``RelayError/Code/responseDecoding`` when the body
    ///   does not decode.
    public nonisolated func execute<Value: Decodable>(
        _ call: HTTPCall,
        as type: Value.Type,
        using decoder: JSONDecoder = JSONDecoder()
    ) async throws -> Value {
        try await execute(call).decode(type, using: decoder)
    }
}

extension CallHandle {
    /// The response of an HTTP operation, once it completes: status, headers, body, and a download's file.
    ///
    /// - Throws: The errors of ``value``, and ``RelayError/Code/responseDecoding`` when the operation is not HTTP.
    public var response: CallResponse {
        get async throws { try CallResponse(decoding: try await completedResult) }
    }
}
