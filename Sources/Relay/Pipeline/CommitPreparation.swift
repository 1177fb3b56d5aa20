/// What a commit's operations tell of themselves, worked out before the lock is taken: each id's index hash, and the
/// first operation whose content is invalid.
///
/// Reading the operations here also brings them into the cache, so that the critical section does not wait on them.
struct CommitPreparation: Sendable {
    let hashes: [UInt32]
    let firstInvalid: (position: Int, error: RelayError)?

    init(_ batch: [CallOperation], limits: PipelineStateMachine.Limits) {
        var hashes: [UInt32] = []
        hashes.reserveCapacity(batch.count)
        var firstInvalid: (position: Int, error: RelayError)?
        for (position, operation) in batch.enumerated() {
            hashes.append(OperationIndex.hash(operation.id))
            if firstInvalid == nil, let error = Self.validationError(of: operation, limits: limits) {
                firstInvalid = (position, error)
            }
        }
        self.hashes = hashes
        self.firstInvalid = firstInvalid
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
