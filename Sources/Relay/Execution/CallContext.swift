import Foundation

/// What an executor knows about the attempt it runs, and where it reports what the attempt observed.
public struct CallContext: Sendable, Hashable {
    /// The attempt number, starting at 1; attempts interrupted by a crash or shutdown count.
    public let attempt: Int
    /// When the attempt started, on the DataPoint's clock.
    public let startedAt: Date
    let operationID: UUID
    private let record: OperationRecord
    /// The worker that runs the attempt, and the slot the attempt's operation holds.
    let link: WorkerLink
    let slot: Int32

    init(attempt: Int, startedAt: Date, record: OperationRecord, link: WorkerLink, slot: Int32) {
        self.attempt = attempt
        self.startedAt = startedAt
        operationID = record.id
        self.record = record
        self.link = link
        self.slot = slot
    }

    /// Read when asked for, rather than for every attempt (see ``OperationRecord/id``).
    private var explicitIdempotencyKey: String? { record.operation.explicitIdempotencyKey }

    /// The operation's idempotency key, the same across attempts and restarts.
    public var idempotencyKey: String {
        explicitIdempotencyKey ?? CallOperation.derivedIdempotencyKey(operationID)
    }

    /// Hands over what this attempt observed, before returning its outcome.
    ///
    /// The engine publishes it as ``CallEvent/Kind/attemptEnded(_:)`` and puts its measurements on the operation's
    /// ``CallMetrics``. A later call replaces an earlier one; a call after the attempt ended is ignored.
    ///
    /// - Parameter report: What the attempt observed; its ``AttemptReport/attempt`` is set from this context.
    public func report(_ report: AttemptReport) {
        var report = report
        report.attempt = attempt
        link.recorder.record(report, for: operationID)
    }

    /// Stages model changes to commit with this attempt's outcome (S21): if the attempt completes or skips its
    /// operation, the changes are in the same atomic, durable commit as the outcome, and after a crash both are there
    /// or neither is; if it retries, fails or throws, they are discarded.
    ///
    /// ```swift
    /// let order = try JSONDecoder().decode(Order.self, from: reply)
    /// try context.stage { tx in try tx.upsert(order) }
    /// return .completed(reply)
    /// ```
    ///
    /// - Parameter body: Stages upserts, removals and key-values; operations it enqueues are ignored.
    /// - Throws: What `body` throws, such as ``RelayError/Code/unknownCollection``; nothing is staged then.
    public func stage(_ body: (inout Transaction) throws -> Void) throws {
        var transaction = link.core.newTransaction()
        try body(&transaction)
        guard !transaction.changes.isEmpty else { return }
        link.recorder.stage(transaction.changes, for: operationID, attempt: attempt)
    }

    /// Runs `body` under a deadline on the DataPoint's clock, and returns `nil` when the deadline cuts it short.
    ///
    /// When `timeout` passes before `body` ends, the attempt's task is cancelled. `body` ends as it ends on any
    /// cancellation, usually by throwing `CancellationError`, and this returns `nil` instead of rethrowing. The task
    /// stays cancelled, so return the attempt's outcome at once, for example
    /// ``CallOutcome/retry(after:reason:)``; the worker that ran it then leaves its sequence, which starts another in
    /// its place.
    ///
    /// ```swift
    /// let reply = try await context.withTimeout(.seconds(5)) { try await client.send(request) }
    /// guard let reply else { return .retry(reason: "no reply within 5 seconds") }
    /// ```
    ///
    /// Every attempt's deadline waits on the DataPoint's one loop of attempt deadlines, so a thousand calls in flight
    /// cost no sleeping task each. An error `body` throws before the deadline is rethrown. Calls may nest; an inner
    /// deadline never outlasts the one around it.
    ///
    /// - Parameters:
    ///   - timeout: How long `body` may run, on the DataPoint's clock.
    ///   - body: The work under the deadline.
    /// - Returns: What `body` returned, or `nil` when the deadline passed first.
    /// - Throws: What `body` threw before the deadline.
    public func withTimeout<Value>(_ timeout: Duration, _ body: () async throws -> Value) async throws -> Value? {
        let attempt = AttemptDeadlines.Attempt(
            slot: slot, worker: link.worker, number: attempt, operationID: operationID)
        return try await link.core.attemptTimer.run(timeout, for: attempt, body)
    }

    /// Whether the DataPoint that runs this attempt tells time by the system clock, so that an executor on the system
    /// clock may leave its deadline to ``withTimeout(_:_:)``.
    var tellsSystemTime: Bool { link.core.clock.isSystem }

    /// Whether two contexts describe the same attempt.
    public static func == (lhs: CallContext, rhs: CallContext) -> Bool {
        lhs.attempt == rhs.attempt && lhs.startedAt == rhs.startedAt && lhs.operationID == rhs.operationID
            && lhs.explicitIdempotencyKey == rhs.explicitIdempotencyKey
    }

    /// Hashes the attempt's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(attempt)
        hasher.combine(startedAt)
        hasher.combine(operationID)
        hasher.combine(explicitIdempotencyKey)
    }
}
