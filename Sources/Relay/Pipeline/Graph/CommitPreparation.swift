/// What a commit's operations tell of themselves, worked out before the lock is taken: each id's index hash, and
/// every operation whose content is invalid.
///
/// Every one, not just the first: an operation known already is not validated again, and one restored from a store
/// may exceed a payload limit that was lowered since, so the first invalid operation is not always the one rejected.
///
/// Reading the operations here also brings them into the cache, so that the critical section does not wait on them.
struct CommitPreparation: Sendable {
    let hashes: [UInt32]
    /// In commit order.
    let invalid: [(position: Int, error: RelayError)]

    init(_ batch: [CallOperation], limits: PipelineStateMachine.Limits) {
        var hashes: [UInt32] = []
        hashes.reserveCapacity(batch.count)
        var invalid: [(position: Int, error: RelayError)] = []
        for (position, operation) in batch.enumerated() {
            hashes.append(OperationIndex.hash(operation.id))
            if let error = Self.validationError(of: operation, limits: limits) { invalid.append((position, error)) }
        }
        self.hashes = hashes
        self.invalid = invalid
    }

    private static func validationError(
        of operation: CallOperation,
        limits: PipelineStateMachine.Limits
    ) -> RelayError? {
        if operation.payload.count > limits.maximumPayloadSize {
            return RelayError(
                .payloadTooLarge,
                "payload of operation \(operation.id) is \(operation.payload.count) bytes; "
                    + "the limit is \(limits.maximumPayloadSize)",
                operationIDs: [operation.id]
            )
        }
        if let failure = operation.retryPolicy.validationFailure {
            return RelayError(
                .invalidRetryPolicy,
                "retry policy of operation \(operation.id): \(failure)",
                operationIDs: [operation.id]
            )
        }
        return nil
    }
}
