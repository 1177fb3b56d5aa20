import Foundation
import Synchronization

/// Where an executor's ``AttemptReport`` waits until its worker finishes the attempt.
///
/// One per worker, reused for every attempt the worker runs, so operations that report nothing cost one uncontended
/// lock and no allocation.
final class AttemptRecorder: Sendable {
    /// Boxed, so that taking nothing (the common case) moves one pointer out of the lock rather than a whole report.
    private final class Pending: Sendable {
        let operationID: UUID
        let report: AttemptReport

        init(operationID: UUID, report: AttemptReport) {
            self.operationID = operationID
            self.report = report
        }
    }

    private let pending = Mutex<Pending?>(nil)

    func record(_ report: AttemptReport, for operationID: UUID) {
        let recorded = Pending(operationID: operationID, report: report)
        pending.withLock { $0 = recorded }
    }

    /// The report of the given attempt, if its executor made one; a report left behind by anything else is dropped.
    func take(for operationID: UUID, attempt: Int) -> AttemptReport? {
        guard let taken = pending.withLock({ $0.take() }), taken.operationID == operationID,
            taken.report.attempt == attempt
        else { return nil }
        return taken.report
    }
}
