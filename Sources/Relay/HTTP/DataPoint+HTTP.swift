import Foundation

extension DataPoint {
    /// Enqueues an HTTP call as one operation and waits for its response.
    ///
    /// - Important: The call runs on ``CallSequence/Name/data`` unless `sequence` names another, and `data` runs one
    ///   operation at a time by default: a server that executes calls from concurrent requests runs them one after
    ///   another. Give them a sequence of their own with a larger bunch size, and name it here.
    ///
    /// ```swift
    /// try await point.upsertCallSequence(CallSequence(name: "webhooks", bunchSize: 32))
    /// let call = HTTPCall(method: .post, url: hook, body: .data(payload))
    /// let response = try await point.execute(call, on: "webhooks")
    /// print(response.status, response.rawString)
    /// ```
    ///
    /// - Parameters:
    ///   - call: The call.
    ///   - sequence: The sequence it runs on; by default the one
    ///     ``CallOperation/http(_:id:sequenceName:dependencies:priority:retryPolicy:idempotencyKey:persistentUserInfo:)``
    ///     chooses: `data`, or `downloads` and `uploads` for calls with a destination or a file body.
    ///   - retryPolicy: How failed attempts are retried; five attempts, from one second up to a minute apart, unless
    ///     given.
    ///   - deadline: How long to wait before cancelling the call and throwing ``RelayError/Code/deadlineExceeded``:
    ///     a host that does not answer ends here, with the reason; ``executeDeadline`` unless given, `nil` for none.
    /// - Returns: The accepted response.
    /// - Throws: ``RelayError``: the call's validation errors, ``RelayError/Code/operationFailed`` when the call
    ///   fails for good (a status that is neither accepted nor retryable, or retries used up), and the errors of
    ///   ``execute(_:deadline:)-(CallOperation,_)``.
    public nonisolated func execute(
        _ call: HTTPCall, on sequence: CallSequence.Name? = nil, retryPolicy: RetryPolicy = .default,
        deadline: Duration? = DataPoint.executeDeadline
    ) async throws -> CallResponse {
        let operation = try CallOperation.http(call, sequenceName: sequence, retryPolicy: retryPolicy)
        return try await executed(operation, deadline: deadline).response
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
    ///   - sequence: The sequence it runs on (see ``execute(_:on:retryPolicy:deadline:)``).
    ///   - retryPolicy: How failed attempts are retried.
    ///   - deadline: How long to wait (see ``execute(_:on:retryPolicy:deadline:)``).
    /// - Returns: The decoded body.
    /// - Throws: The errors of ``execute(_:on:retryPolicy:deadline:)``, and ``RelayError/Code/responseDecoding`` when
    ///   the body does not decode.
    public nonisolated func execute<Value: Decodable>(
        _ call: HTTPCall,
        as type: Value.Type,
        using decoder: JSONDecoder = JSONDecoder(),
        on sequence: CallSequence.Name? = nil,
        retryPolicy: RetryPolicy = .default,
        deadline: Duration? = DataPoint.executeDeadline
    ) async throws -> Value {
        try await execute(call, on: sequence, retryPolicy: retryPolicy, deadline: deadline).decode(type, using: decoder)
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
