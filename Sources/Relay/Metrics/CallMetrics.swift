import Foundation

/// Timing of one operation, carried by its finishing event and available from its status.
public struct CallMetrics: Sendable, Hashable {
    /// When the operation was enqueued.
    public var enqueuedAt: Date
    /// When its first attempt started.
    public var startedAt: Date?
    /// When it reached its terminal state.
    public var finishedAt: Date?
    /// Time from enqueue to the first attempt's start.
    public var queueWait: Duration?
    /// Time spent in the executor, summed over attempts.
    public var runTime: Duration
    /// How many attempts started.
    public var attempts: Int
    /// The HTTP status of the last attempt, for HTTP operations.
    public var httpStatus: Int?
    /// Bytes sent by the last attempt, for HTTP operations.
    public var bytesSent: Int?
    /// Bytes received by the last attempt, for HTTP operations.
    public var bytesReceived: Int?

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
        self.enqueuedAt = enqueuedAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.queueWait = queueWait
        self.runTime = runTime
        self.attempts = attempts
    }
}
