import Foundation

extension CallEvent: CustomStringConvertible {
    /// One line: the sequence number, the date, the operation, the sequence and what happened.
    ///
    /// `#12 2026-11-26T07:29:19.123Z 5F0E…-… data: completed: 1 attempt, waited 1.2 ms, ran 3.4 ms`
    public var description: String {
        var line = "#\(sequenceNumber) \(date.readable)"
        if let operationID { line += " \(operationID)" }
        if let sequenceName { line += " \(sequenceName)" }
        return line + ": \(kind)"
    }
}

extension CallEvent.Kind: CustomStringConvertible {
    /// The case's name, without its values: `started`, `retryScheduled`, and so on.
    public var name: String {
        switch value {
        case .enqueued: "enqueued"
        case .started: "started"
        case .attemptEnded: "attemptEnded"
        case .completed: "completed"
        case .skipped: "skipped"
        case .retryScheduled: "retryScheduled"
        case .failed: "failed"
        case .cancelled: "cancelled"
        case .held: "held"
        case .suspended: "suspended"
        case .resumed: "resumed"
        case .offline: "offline"
        case .online: "online"
        case .modelChanged: "modelChanged"
        case .dropped: "dropped"
        case .recovered: "recovered"
        }
    }

    /// Whether the kind is ``enqueued(snapshot:)``.
    public var isEnqueued: Bool { if case .enqueued = value { true } else { false } }
    /// Whether the kind is ``started(attempt:)``.
    public var isStarted: Bool { if case .started = value { true } else { false } }
    /// Whether the kind is ``attemptEnded(_:)``.
    public var isAttemptEnded: Bool { if case .attemptEnded = value { true } else { false } }
    /// Whether the kind is ``completed(_:)``.
    public var isCompleted: Bool { if case .completed = value { true } else { false } }
    /// Whether the kind is ``skipped(_:)``.
    public var isSkipped: Bool { if case .skipped = value { true } else { false } }
    /// Whether the kind is ``retryScheduled(attempt:at:reason:)``.
    public var isRetryScheduled: Bool { if case .retryScheduled = value { true } else { false } }
    /// Whether the kind is ``failed(_:_:)``.
    public var isFailed: Bool { if case .failed = value { true } else { false } }
    /// Whether the kind is ``cancelled(_:_:)``.
    public var isCancelled: Bool { if case .cancelled = value { true } else { false } }
    /// Whether the kind is ``held(until:context:)``.
    public var isHeld: Bool { if case .held = value { true } else { false } }
    /// Whether the kind is ``suspended(reason:)``.
    public var isSuspended: Bool { if case .suspended = value { true } else { false } }
    /// Whether the kind is ``resumed(reason:)``.
    public var isResumed: Bool { if case .resumed = value { true } else { false } }
    /// Whether the kind is ``offline(destination:reason:)``.
    public var isOffline: Bool { if case .offline = value { true } else { false } }
    /// Whether the kind is ``online(destination:reason:)``.
    public var isOnline: Bool { if case .online = value { true } else { false } }
    /// Whether the kind is ``modelChanged(_:)``.
    public var isModelChanged: Bool { if case .modelChanged = value { true } else { false } }
    /// Whether the kind is ``dropped(_:)``.
    public var isDropped: Bool { if case .dropped = value { true } else { false } }
    /// Whether the kind is ``recovered(_:)``.
    public var isRecovered: Bool { if case .recovered = value { true } else { false } }

    /// What happened, in words: `started attempt 2`, `retry of attempt 1 at 2026-11-26T07:30:00.000Z: busy`.
    public var description: String {
        switch value {
        case .enqueued(let snapshot): "enqueued in commit \(snapshot)"
        case .started(let attempt): "started attempt \(attempt)"
        case .attemptEnded(let report): "ended \(report)"
        case .completed(let metrics): "completed: \(metrics)"
        case .skipped(let metrics): "skipped: \(metrics)"
        case .retryScheduled(let attempt, let date, let reason):
            "retry of attempt \(attempt) at \(date.readable): \(reason)"
        case .failed(let failure, let metrics): "failed: \(failure); \(metrics)"
        case .cancelled(let cancellation, let metrics): "cancelled: \(cancellation); \(metrics)"
        case .held(let until?, let context): "held until \(until.readable)" + (context.map { " (\($0))" } ?? "")
        case .held(nil, let context): "hold released" + (context.map { " (\($0))" } ?? "")
        case .suspended(let reason): "suspended: \(reason)"
        case .resumed(let reason): "resumed: \(reason)"
        case .offline(let destination, let reason):
            "\(destination) is offline" + (reason.isEmpty ? "" : ": \(reason)")
        case .online(let destination, let reason): "\(destination) is online: \(reason)"
        case .modelChanged(let change): "\(change)"
        case .dropped(let dropped): "dropped \(dropped) this subscriber had no room for"
        case .recovered(let report): "recovered: \(report)"
        }
    }
}
