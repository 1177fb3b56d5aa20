import Foundation

/// Timing of one operation, carried by its finishing event and available from its status.
///
/// For operations whose executor reports its attempts (HTTP operations do), the status, byte counts and times to
/// headers and to the end of the body are those of the last reported attempt, measured in this process.
///
/// Stored compactly (every event that finishes an operation carries one), and read through the properties below.
public struct CallMetrics: Sendable, Hashable {
    private static let noDate = -Double.infinity
    private static let noDuration = Int64.min
    private static let noCount = Int64.min

    private var enqueued: Double
    private var started = noDate
    private var finished = noDate
    private var waited = noDuration
    private var ran: Int64 = 0
    private var attemptCount: Int64 = 0
    private var status = noCount
    private var sent = noCount
    private var received = noCount
    private var headersAfter = noDuration
    private var bodyAfter = noDuration

    /// When the operation was enqueued.
    public var enqueuedAt: Date {
        get { Date(timeIntervalSinceReferenceDate: enqueued) }
        set { enqueued = newValue.timeIntervalSinceReferenceDate }
    }

    /// When its first attempt started.
    public var startedAt: Date? {
        get { Self.date(started) }
        set { started = newValue?.timeIntervalSinceReferenceDate ?? Self.noDate }
    }

    /// When it reached its terminal state.
    public var finishedAt: Date? {
        get { Self.date(finished) }
        set { finished = newValue?.timeIntervalSinceReferenceDate ?? Self.noDate }
    }

    /// Time from enqueue to the first attempt's start.
    public var queueWait: Duration? {
        get { Self.duration(waited) }
        set { waited = newValue?.relayNanoseconds ?? Self.noDuration }
    }

    /// Time spent in the executor, summed over attempts.
    public var runTime: Duration {
        get { .nanoseconds(ran) }
        set { ran = newValue.relayNanoseconds }
    }

    /// How many attempts started.
    public var attempts: Int {
        get { Int(attemptCount) }
        set { attemptCount = Int64(newValue) }
    }

    /// The HTTP status of the last attempt, for HTTP operations.
    public var httpStatus: Int? {
        get { Self.count(status) }
        set { status = newValue.map(Int64.init) ?? Self.noCount }
    }

    /// Bytes sent by the last attempt, for HTTP operations.
    public var bytesSent: Int? {
        get { Self.count(sent) }
        set { sent = newValue.map(Int64.init) ?? Self.noCount }
    }

    /// Bytes received by the last attempt, for HTTP operations.
    public var bytesReceived: Int? {
        get { Self.count(received) }
        set { received = newValue.map(Int64.init) ?? Self.noCount }
    }

    /// Time from the last attempt's start to its response headers, for HTTP operations.
    public var timeToResponseHeaders: Duration? {
        get { Self.duration(headersAfter) }
        set { headersAfter = newValue?.relayNanoseconds ?? Self.noDuration }
    }

    /// Time from the last attempt's start to the end of its response body, for HTTP operations.
    public var timeToEndOfBody: Duration? {
        get { Self.duration(bodyAfter) }
        set { bodyAfter = newValue?.relayNanoseconds ?? Self.noDuration }
    }

    /// Takes the measurements of an attempt: status, bytes and times.
    mutating func apply(_ report: AttemptFigures) {
        httpStatus = report.httpStatus
        bytesSent = report.bytesSent
        bytesReceived = report.bytesReceived
        timeToResponseHeaders = report.timeToResponseHeaders
        timeToEndOfBody = report.timeToEndOfBody
    }

    private static func duration(_ nanoseconds: Int64) -> Duration? {
        nanoseconds == noDuration ? nil : .nanoseconds(nanoseconds)
    }

    private static func date(_ seconds: Double) -> Date? {
        seconds == noDate ? nil : Date(timeIntervalSinceReferenceDate: seconds)
    }

    private static func count(_ value: Int64) -> Int? {
        value == noCount ? nil : Int(value)
    }

    /// Creates a metrics value.
    ///
    /// - Parameters:
    ///   - enqueuedAt: When the operation was enqueued.
    ///   - startedAt: When its first attempt started.
    ///   - finishedAt: When it finished.
    ///   - queueWait: Time from enqueue to first start.
    ///   - runTime: Time spent in the executor.
    ///   - attempts: Attempts started.
    public init(
        enqueuedAt: Date,
        startedAt: Date? = nil,
        finishedAt: Date? = nil,
        queueWait: Duration? = nil,
        runTime: Duration = .zero,
        attempts: Int = 0
    ) {
        enqueued = enqueuedAt.timeIntervalSinceReferenceDate
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.queueWait = queueWait
        self.runTime = runTime
        self.attempts = attempts
    }
}

extension CallMetrics: CustomStringConvertible {
    /// `1 attempt, waited 1.2 ms, ran 3.4 ms, HTTP 200, sent 120 B, received 3.2 kB`; the HTTP figures only for an
    /// operation whose executor reported them.
    public var description: String {
        var parts = [attempts.counted("attempt")]
        if let queueWait { parts.append("waited \(queueWait.readable)") }
        parts.append("ran \(runTime.readable)")
        if let httpStatus { parts.append("HTTP \(httpStatus)") }
        if let bytesSent { parts.append("sent \(bytesSent.readableBytes)") }
        if let bytesReceived { parts.append("received \(bytesReceived.readableBytes)") }
        return parts.joined(separator: ", ")
    }
}
