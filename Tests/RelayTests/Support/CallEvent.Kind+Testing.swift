import Foundation
import Relay

/// Readings of event kinds that tests compare and filter on.
extension CallEvent.Kind {
    var retryDate: Date? {
        if case .retryScheduled(_, let date, _) = self { return date }
        return nil
    }

    var report: AttemptReport? {
        if case .attemptEnded(let report) = self { return report }
        return nil
    }
}
