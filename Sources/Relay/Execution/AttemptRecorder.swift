import Foundation
import Synchronization

/// Where an executor's ``AttemptReport`` waits until its worker finishes the attempt.
///
/// One per worker, reused for every attempt the worker runs, so operations that report nothing cost one uncontended
/// lock and no allocation.
final class AttemptRecorder: Sendable {
    private let pending = Mutex<(operationID: UUID, report: AttemptReport)?>(nil)

    func record(_ report: AttemptReport, for operationID: UUID) {
        pending.withLock { $0 = (operationID, report) }
    }

    /// The report of the given attempt, if its executor made one; a report left behind by anything else is dropped.
    func take(for operationID: UUID, attempt: Int) -> AttemptReport? {
        guard let taken = pending.withLock({ $0.take() }), taken.operationID == operationID,
            taken.report.attempt == attempt
        else { return nil }
        return taken.report
    }
}
