import Foundation
import Synchronization

/// Where an executor's ``AttemptReport`` waits until its worker finishes the attempt.
///
/// One per worker, reused for every attempt the worker runs, so operations that report nothing cost one atomic load and
/// no allocation.
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
    /// Whether `pending` holds a report; written under the lock, read before it so that most attempts skip it.
    private let filled = Atomic<Bool>(false)
    /// Model changes the running attempt staged, with its operation and attempt; read like `pending`.
    private let staged = Mutex<(operationID: UUID, attempt: Int, changes: [ModelChange])?>(nil)
    private let hasStaged = Atomic<Bool>(false)

    /// Adds model changes to those the attempt staged, to be committed with its outcome if it completes or skips.
    func stage(_ changes: [ModelChange], for operationID: UUID, attempt: Int) {
        staged.withLock { staged in
            if let current = staged, current.operationID == operationID, current.attempt == attempt {
                staged = (operationID, attempt, current.changes + changes)
            } else {
                staged = (operationID, attempt, changes)
            }
            hasStaged.store(true, ordering: .releasing)
        }
    }

    /// The model changes the given attempt staged; changes left behind by anything else are dropped.
    func takeChanges(for operationID: UUID, attempt: Int) -> [ModelChange] {
        guard hasStaged.load(ordering: .acquiring) else { return [] }
        let taken = staged.withLock { staged in
            hasStaged.store(false, ordering: .relaxed)
            return staged.take()
        }
        guard let taken, taken.operationID == operationID, taken.attempt == attempt else { return [] }
        return taken.changes
    }

    func record(_ report: AttemptReport, for operationID: UUID) {
        let recorded = Pending(operationID: operationID, report: report)
        pending.withLock { pending in
            pending = recorded
            filled.store(true, ordering: .releasing)
        }
    }

    /// The report of the given attempt, if its executor made one; a report left behind by anything else is dropped.
    ///
    /// A report made before the executor returned is seen: the executor's return orders it before this call.
    func take(for operationID: UUID, attempt: Int) -> AttemptReport? {
        guard filled.load(ordering: .acquiring) else { return nil }
        let taken = pending.withLock { pending in
            filled.store(false, ordering: .relaxed)
            return pending.take()
        }
        guard let taken, taken.operationID == operationID, taken.report.attempt == attempt else { return nil }
        return taken.report
    }
}
