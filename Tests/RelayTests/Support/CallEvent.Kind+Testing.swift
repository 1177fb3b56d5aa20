import Foundation
import Relay

/// Readings of event kinds that tests compare and filter on.
extension CallEvent.Kind {
    /// The case's name, without its values.
    var name: String {
        switch self {
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
        case .dropped: "dropped"
        case .recovered: "recovered"
        }
    }

    var isRetryScheduled: Bool { name == "retryScheduled" }
    var isSuspended: Bool { name == "suspended" }
    var isResumed: Bool { name == "resumed" }

    var retryDate: Date? {
        if case .retryScheduled(_, let date, _) = self { return date }
        return nil
    }

    var report: AttemptReport? {
        if case .attemptEnded(let report) = self { return report }
        return nil
    }
}
