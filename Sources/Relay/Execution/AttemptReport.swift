import Foundation

/// What one attempt observed: for HTTP operations, the response or the error, with timings and byte counts.
///
/// An executor hands it over with ``CallContext/report(_:)``. The engine publishes it to
/// ``DataPoint/events(for:bufferSize:)`` as ``CallEvent/Kind/attemptEnded(_:)``, before the event that says what
/// happens next, and puts the measurements of the last report on the operation's ``CallMetrics``.
///
/// ```swift
/// let events = try point.events(for: handle.id)
/// for await event in events {
///     if let report = event.kind.report {
///         print(report.attempt, report.response?.status ?? 0, report.error ?? "")
///     }
/// }
/// ```
///
/// Reports live in memory only; an operation reopened from a store has none until it runs again.
public struct AttemptReport: Sendable, Hashable {
    /// The attempt's number, starting at 1; the engine sets it from the ``CallContext``.
    public internal(set) var attempt = 0
    /// The response the attempt received, whether or not it was accepted.
    ///
    /// An accepted HTTP response is not carried twice: it travels once, encoded in the attempt's
    /// ``CallOutcome/completed(_:)``, and this reads it from there.
    public var response: CallResponse? {
        get {
            switch answer {
            case .none, .inResult: nil
            case .value(let response): response
            case .result(let encoded): try? CallResponse(encoded: encoded)
            }
        }
        set {
            answer = newValue.map(Answer.value) ?? .none
            httpStatus = newValue?.status
        }
    }
    /// Why the attempt failed, when it got no acceptable response; never contains secrets.
    public var error: String?
    /// Time from the attempt's start to the final response's status and headers.
    public var timeToResponseHeaders: Duration?
    /// Time from the attempt's start to the end of the final response's body.
    public var timeToEndOfBody: Duration?
    /// Body bytes sent, summed over the redirects the attempt followed.
    public var bytesSent: Int?
    /// Body bytes received, summed over the redirects the attempt followed.
    public var bytesReceived: Int?

    /// The status of the response, if one arrived.
    public private(set) var httpStatus: Int?

    /// Where the response is.
    private var answer: Answer

    private enum Answer: Sendable {
        case none
        case value(CallResponse)
        /// In the outcome the attempt returns, which ``attachResult(_:)`` gives the report.
        case inResult
        case result(Data)
    }

    /// Creates a report.
    ///
    /// - Parameters:
    ///   - response: The response the attempt received.
    ///   - error: Why the attempt failed; it must not contain secrets.
    ///   - timeToResponseHeaders: Time from the attempt's start to the response headers.
    ///   - timeToEndOfBody: Time from the attempt's start to the end of the body.
    ///   - bytesSent: Body bytes sent.
    ///   - bytesReceived: Body bytes received.
    public init(
        response: CallResponse? = nil,
        error: String? = nil,
        timeToResponseHeaders: Duration? = nil,
        timeToEndOfBody: Duration? = nil,
        bytesSent: Int? = nil,
        bytesReceived: Int? = nil
    ) {
        answer = response.map(Answer.value) ?? .none
        httpStatus = response?.status
        self.error = error
        self.timeToResponseHeaders = timeToResponseHeaders
        self.timeToEndOfBody = timeToEndOfBody
        self.bytesSent = bytesSent
        self.bytesReceived = bytesReceived
    }
}

extension AttemptReport {
    /// A report whose response, with this status, is the result of the attempt's ``CallOutcome/completed(_:)``.
    static func answeredInResult(status: Int, _ report: AttemptReport) -> AttemptReport {
        var report = report
        report.answer = .inResult
        report.httpStatus = status
        return report
    }

    /// Points a report made by ``answeredInResult(status:_:)`` at the result it left its response in.
    mutating func attachResult(of outcome: CallOutcome) {
        guard case .inResult = answer, case .completed(let encoded) = outcome else { return }
        answer = .result(encoded)
    }

    /// The response the report carries itself: one that did not complete the attempt, which a failure keeps.
    var carriedResponse: CallResponse? {
        if case .value(let response) = answer { response } else { nil }
    }

    /// Whether the two reports say the same, however each holds its response.
    public static func == (lhs: AttemptReport, rhs: AttemptReport) -> Bool {
        lhs.attempt == rhs.attempt && lhs.httpStatus == rhs.httpStatus && lhs.error == rhs.error
            && lhs.timeToResponseHeaders == rhs.timeToResponseHeaders && lhs.timeToEndOfBody == rhs.timeToEndOfBody
            && lhs.bytesSent == rhs.bytesSent && lhs.bytesReceived == rhs.bytesReceived && lhs.response == rhs.response
    }

    /// Hashes what equality compares but the response, whose status stands for it.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(attempt)
        hasher.combine(httpStatus)
        hasher.combine(error)
        hasher.combine(timeToResponseHeaders)
        hasher.combine(timeToEndOfBody)
        hasher.combine(bytesSent)
        hasher.combine(bytesReceived)
    }
}

extension AttemptReport: CustomStringConvertible {
    /// `attempt 1: HTTP 200, headers after 2.1 ms, body after 3.4 ms`, or `attempt 2: connection refused`.
    public var description: String {
        var parts: [String] = []
        if let httpStatus { parts.append("HTTP \(httpStatus)") }
        if let error { parts.append(error) }
        if let timeToResponseHeaders { parts.append("headers after \(timeToResponseHeaders.readable)") }
        if let timeToEndOfBody { parts.append("body after \(timeToEndOfBody.readable)") }
        return "attempt \(attempt): " + (parts.isEmpty ? "no figures" : parts.joined(separator: ", "))
    }
}
