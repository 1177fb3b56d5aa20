import Foundation

/// One operation's content, held by the pipeline while it knows the operation, and its outcome.
final class OperationRecord: Sendable {
    /// The operation as enqueued, with its snapshot.
    let operation: CallOperation
    /// The operation's id, kept beside it so that reading it does not reach into the operation's storage.
    let id: UUID
    /// Where the outcome is kept; the operation's handles share it.
    let outcome = OperationOutcome()

    init(operation: CallOperation) {
        self.operation = operation
        id = operation.id
    }

    /// The records of operations enqueued or restored together; a commit stores each with its `snapshot`, a restore
    /// passes `nil` and keeps the one each operation has.
    static func records(
        for operations: some RandomAccessCollection<CallOperation>,
        snapshot: UInt64?
    ) -> [OperationRecord] {
        operations.map { operation in
            var stored = operation
            if let snapshot { stored.snapshot = snapshot }
            return OperationRecord(operation: stored)
        }
    }

    /// Runs an attempt of the operation on `executor`.
    func attempt(on executor: any CallExecutor, context: CallContext) async throws -> CallOutcome {
        try await executor.execute(operation, context: context)
    }
}
