import Foundation

/// Operations enqueued now and started later.
extension DataPoint {
    /// Enqueues operations as one commit, held until `date`: none starts before it, whatever its dependencies.
    ///
    /// The start time is a hold of context ``CallOperation/startContext``, recorded in the same commit, so it
    /// survives a restart; ``hold(_:until:context:)`` with that context moves it, and with `nil` lets the
    /// operations start at once. An operation that was known already keeps its own schedule.
    ///
    /// ```swift
    /// let reminder = try CallOperation.http(HTTPCall(method: .post, url: reminders))
    /// try await point.enqueue([reminder], at: renewal.addingTimeInterval(-86_400))
    /// ```
    ///
    /// - Parameters:
    ///   - operations: The operations, in call order.
    ///   - date: When they may start.
    /// - Returns: Their handles, in the same order.
    /// - Throws: The errors of ``enqueue(_:)-([CallOperation])``.
    @discardableResult
    public nonisolated func enqueue(_ operations: [CallOperation], at date: Date) async throws -> [CallHandle] {
        try await enqueue(operations, startingAt: core.clock.time(of: date))
    }

    /// Enqueues an operation as one commit, held until `date`; see ``enqueue(_:at:)-([CallOperation],_)``.
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - date: When it may start.
    /// - Returns: Its handle.
    /// - Throws: The errors of ``enqueue(_:)-(CallOperation)``.
    @discardableResult
    public nonisolated func enqueue(_ operation: CallOperation, at date: Date) async throws -> CallHandle {
        try await enqueue([operation], at: date)[0]
    }

    /// Enqueues an operation as one commit, held for `delay` on the DataPoint's clock; see
    /// ``enqueue(_:at:)-([CallOperation],_)``.
    ///
    /// ```swift
    /// try await point.enqueue(followUp, after: .seconds(3600))
    /// ```
    ///
    /// - Parameters:
    ///   - operation: The operation.
    ///   - delay: How long from now it waits before it may start.
    /// - Returns: Its handle.
    /// - Throws: The errors of ``enqueue(_:)-(CallOperation)``.
    @discardableResult
    public nonisolated func enqueue(_ operation: CallOperation, after delay: Duration) async throws -> CallHandle {
        try await enqueue([operation], startingAt: core.clock.now + delay.relayNanoseconds)[0]
    }

    private nonisolated func enqueue(_ operations: [CallOperation], startingAt start: Int64) async throws
        -> [CallHandle]
    {
        let startTimes = Dictionary(operations.map { ($0.id, start) }, uniquingKeysWith: { first, _ in first })
        return try await core.enqueue(operations, startTimes: startTimes).map { CallHandle(record: $0, core: core) }
    }
}

extension CallOperation {
    /// The hold context of a start time given at enqueue (see ``DataPoint/enqueue(_:at:)-([CallOperation],_)``):
    /// `relay.start`.
    public static let startContext = "relay.start"
}
