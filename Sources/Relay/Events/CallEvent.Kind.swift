import Foundation

extension CallEvent {
    /// What happened.
    ///
    /// An extensible struct rather than an enum: releases report more kinds of event (`offline`, `online` and
    /// `modelChanged` came so), and a new case of a public enum would break every exhaustive `switch` over it. Compare
    /// a kind with `==` or its `is…` properties (``isCompleted``), and read what it carries through its properties
    /// (``report``, ``metrics``, ``reason``), which are `nil` for kinds that carry no such thing.
    ///
    /// ```swift
    /// let events = try point.events(for: handle.id)
    /// for await event in events {
    ///     if let report = event.kind.report {
    ///         print(report.attempt, report.response?.status ?? 0, report.error ?? "")
    ///     }
    ///     if event.kind.isTerminal { break }
    /// }
    /// ```
    public struct Kind: Sendable, Hashable {
        /// The kinds this release tells apart, with what each carries; the package's own code switches over them.
        package enum Value: Sendable, Hashable {
            case enqueued(snapshot: UInt64)
            case started(attempt: Int)
            case attemptEnded(AttemptReport)
            case completed(CallMetrics)
            case skipped(CallMetrics)
            case retryScheduled(attempt: Int, at: Date, reason: String)
            case failed(CallFailure, CallMetrics)
            case cancelled(CallCancellation, CallMetrics)
            case held(until: Date?, context: String?)
            case suspended(reason: String)
            case resumed(reason: String)
            case offline(destination: String, reason: String)
            case online(destination: String, reason: String)
            case modelChanged(DocumentChange)
            case dropped(DroppedEvents)
            case recovered(RecoveryReport)
        }

        package let value: Value

        /// The operation was enqueued in the given commit.
        public static func enqueued(snapshot: UInt64) -> Kind { Kind(value: .enqueued(snapshot: snapshot)) }

        /// An attempt started: its executor ran it.
        ///
        /// Dated when the attempt was handed to a worker. An operation that a worker claimed behind another, in a
        /// batch of fast operations, is reported once the worker has run it, just before the event that ends the
        /// attempt; one that the worker gave back unrun (because the sequence was suspended meanwhile, say) is not
        /// reported, so counting these events counts the executor's calls.
        public static func started(attempt: Int) -> Kind { Kind(value: .started(attempt: attempt)) }

        /// An attempt ended and its executor reported what it observed: for HTTP, the response or the error.
        ///
        /// Published before the event that follows from the attempt: completed, retryScheduled, failed, or its
        /// destination's going offline.
        public static func attemptEnded(_ report: AttemptReport) -> Kind { Kind(value: .attemptEnded(report)) }

        /// The operation completed.
        public static func completed(_ metrics: CallMetrics) -> Kind { Kind(value: .completed(metrics)) }

        /// The operation was skipped.
        public static func skipped(_ metrics: CallMetrics) -> Kind { Kind(value: .skipped(metrics)) }

        /// An attempt failed and another is scheduled.
        public static func retryScheduled(attempt: Int, at date: Date, reason: String) -> Kind {
            Kind(value: .retryScheduled(attempt: attempt, at: date, reason: reason))
        }

        /// The operation failed for good.
        public static func failed(_ failure: CallFailure, _ metrics: CallMetrics) -> Kind {
            Kind(value: .failed(failure, metrics))
        }

        /// The operation was cancelled.
        public static func cancelled(_ cancellation: CallCancellation, _ metrics: CallMetrics) -> Kind {
            Kind(value: .cancelled(cancellation, metrics))
        }

        /// A hold was set (`until` non-nil) or released (`until` nil) for the given context.
        public static func held(until: Date?, context: String?) -> Kind {
            Kind(value: .held(until: until, context: context))
        }

        /// A sequence, or the whole DataPoint when ``CallEvent/sequenceName`` is `nil`, stopped starting operations.
        public static func suspended(reason: String) -> Kind { Kind(value: .suspended(reason: reason)) }

        /// A sequence, or the whole DataPoint, starts operations again.
        public static func resumed(reason: String) -> Kind { Kind(value: .resumed(reason: reason)) }

        /// An operation of the sequence could not reach `destination` (for HTTP, its scheme, host and port): the
        /// sequence's operations to it wait, their attempts given back, while its other destinations go on.
        ///
        /// `reason` is what the executor said, which names the destination too.
        public static func offline(destination: String, reason: String) -> Kind {
            Kind(value: .offline(destination: destination, reason: reason))
        }

        /// The sequence's operations to `destination` may start again: its probe answered, or no operation waits for
        /// it any more.
        public static func online(destination: String, reason: String) -> Kind {
            Kind(value: .online(destination: destination, reason: reason))
        }

        /// A transaction upserted or removed a model (see ``DataPoint/changes(in:bufferSize:)``), or an erasure
        /// cascaded to it.
        public static func modelChanged(_ change: DocumentChange) -> Kind { Kind(value: .modelChanged(change)) }

        /// This subscriber's buffer was full and this many older events were dropped.
        ///
        /// It names the operations whose terminal event was dropped, so that an observer that counts terminal
        /// events still learns that they finished (see ``DroppedEvents``).
        public static func dropped(_ dropped: DroppedEvents) -> Kind { Kind(value: .dropped(dropped)) }

        /// The DataPoint reopened a store and rebuilt its pipeline; published once, when it starts running.
        public static func recovered(_ report: RecoveryReport) -> Kind { Kind(value: .recovered(report)) }
    }
}

extension CallEvent.Kind {
    /// Whether the kind ends its operation's life: completed, skipped, failed or cancelled.
    public var isTerminal: Bool {
        switch value {
        case .completed, .skipped, .failed, .cancelled: true
        default: false
        }
    }

    /// The commit of an ``enqueued(snapshot:)`` event.
    public var snapshot: UInt64? {
        if case .enqueued(let snapshot) = value { snapshot } else { nil }
    }

    /// The attempt that ``started(attempt:)``, or whose retry was scheduled (``retryScheduled(attempt:at:reason:)``).
    public var attempt: Int? {
        switch value {
        case .started(let attempt), .retryScheduled(let attempt, _, _): attempt
        default: nil
        }
    }

    /// What an ``attemptEnded(_:)`` event's attempt observed.
    public var report: AttemptReport? {
        if case .attemptEnded(let report) = value { report } else { nil }
    }

    /// The metrics a terminal event carries.
    public var metrics: CallMetrics? {
        switch value {
        case .completed(let metrics), .skipped(let metrics), .failed(_, let metrics), .cancelled(_, let metrics):
            metrics
        default: nil
        }
    }

    /// Why a ``failed(_:_:)`` operation failed.
    public var failure: CallFailure? {
        if case .failed(let failure, _) = value { failure } else { nil }
    }

    /// Why a ``cancelled(_:_:)`` operation was cancelled.
    public var cancellation: CallCancellation? {
        if case .cancelled(let cancellation, _) = value { cancellation } else { nil }
    }

    /// When a scheduled retry (``retryScheduled(attempt:at:reason:)``) is due.
    public var retryDate: Date? {
        if case .retryScheduled(_, let date, _) = value { date } else { nil }
    }

    /// What a ``held(until:context:)`` event says: the date a hold lasts until (`nil` when it was released) and
    /// its context.
    public var hold: (until: Date?, context: String?)? {
        if case .held(let until, let context) = value { (until, context) } else { nil }
    }

    /// The reason a retry, suspension, resumption, or change of a destination's state gives.
    public var reason: String? {
        switch value {
        case .retryScheduled(_, _, let reason), .suspended(let reason), .resumed(let reason),
            .offline(_, let reason), .online(_, let reason):
            reason
        default: nil
        }
    }

    /// The destination that went ``offline(destination:reason:)`` or came back ``online(destination:reason:)``.
    public var destination: String? {
        switch value {
        case .offline(let destination, _), .online(let destination, _): destination
        default: nil
        }
    }

    /// The model change of a ``modelChanged(_:)`` event.
    public var change: DocumentChange? {
        if case .modelChanged(let change) = value { change } else { nil }
    }

    /// What a ``dropped(_:)`` event says this subscriber missed.
    public var droppedEvents: DroppedEvents? {
        if case .dropped(let dropped) = value { dropped } else { nil }
    }

    /// What a ``recovered(_:)`` event's reopen found.
    public var recovery: RecoveryReport? {
        if case .recovered(let report) = value { report } else { nil }
    }
}
