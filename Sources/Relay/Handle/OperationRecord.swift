import Foundation
import Synchronization

/// One operation's content, held by the pipeline while it knows the operation, and where its outcome is kept.
final class OperationRecord: Sendable {
    /// The operation as enqueued, with its snapshot.
    let operation: CallOperation
    /// The block that keeps the outcome, shared with the handles, and the outcome's place in it.
    let outcomes: OutcomeBlock
    let index: Int32

    /// The operation's id, kept beside it: workers read it here, so that the operation's storage stays in the cache of
    /// the committing task, which retained it and releases it once the operation is forgotten.
    let id: UUID

    init(operation: CallOperation, outcomes: OutcomeBlock, index: Int32) {
        self.operation = operation
        self.outcomes = outcomes
        self.index = index
        id = operation.id
    }

    /// The records of operations enqueued or restored together, their outcomes in shared blocks; a commit stores each
    /// with its `snapshot`, a restore passes `nil` and keeps the one each operation has.
    ///
    /// Each record counts one reference to its block, and nothing more: this runs for every operation committed.
    static func records(
        for operations: some RandomAccessCollection<CallOperation>,
        snapshot: UInt64?
    ) -> [OperationRecord] {
        var records: [OperationRecord] = []
        records.reserveCapacity(operations.count)
        var start = operations.startIndex
        while start != operations.endIndex {
            let end =
                operations.index(start, offsetBy: OutcomeBlock.capacity, limitedBy: operations.endIndex)
                ?? operations.endIndex
            let block = OutcomeBlock(count: operations.distance(from: start, to: end))
            var index: Int32 = 0
            for var stored in operations[start..<end] {
                if let snapshot { stored.snapshot = snapshot }
                records.append(OperationRecord(operation: stored, outcomes: block, index: index))
                index += 1
            }
            start = end
        }
        return records
    }

    /// Runs an attempt of the operation on `executor`.
    ///
    /// The record is borrowed for the whole call, and with it the operation, so the operation reaches the executor
    /// without a retain: a caller that read it out of the record retained its storage, whose count the committing task
    /// changes too.
    func attempt(on executor: any CallExecutor, context: CallContext) async throws -> CallOutcome {
        try await executor.execute(operation, context: context)
    }

    /// The outcome if it is settled, read without suspending.
    var settledOutcome: Result<CallResult, RelayError>? {
        outcomes.settledOutcome(at: index)
    }

    /// Settles the outcome once and resumes every waiter; later calls do nothing.
    func settle(_ outcome: Result<CallResult, RelayError>) {
        outcomes.settle(outcome, at: index)
    }

    /// Records the outcome once and returns the waiters, for the caller to resume outside its own lock.
    func record(_ outcome: Result<CallResult, RelayError>) -> [CheckedContinuation<CallResult, any Error>] {
        outcomes.record(outcome, at: index)
    }
}
