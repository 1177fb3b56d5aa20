import Foundation

/// Typed operations: inputs and outputs as Codable values (see ``TypedOperation``).
extension DataPoint {
    /// Registers a typed operation, which then runs every operation of its kind.
    ///
    /// - Parameter operation: The operation.
    public nonisolated func register<Operation: TypedOperation>(_ operation: Operation) {
        register(TypedExecutor(operation: operation), for: Operation.kind)
    }

    /// Enqueues a typed operation as one commit.
    ///
    /// - Parameter call: The operation.
    /// - Returns: Its handle.
    /// - Throws: The errors of ``enqueue(_:)-(CallOperation)``.
    @discardableResult
    public nonisolated func enqueue<Operation>(_ call: TypedCall<Operation>) async throws -> TypedHandle<Operation> {
        TypedHandle(try await enqueue(call.operation))
    }

    /// Enqueues a typed operation as one commit, held until `date`; see ``enqueue(_:at:)-([CallOperation],_)``.
    ///
    /// - Parameters:
    ///   - call: The operation.
    ///   - date: When it may start.
    /// - Returns: Its handle.
    /// - Throws: The errors of ``enqueue(_:)-(CallOperation)``.
    @discardableResult
    public nonisolated func enqueue<Operation>(
        _ call: TypedCall<Operation>, at date: Date
    ) async throws -> TypedHandle<Operation> {
        TypedHandle(try await enqueue(call.operation, at: date))
    }

    /// Enqueues a typed operation as one commit, held for `delay` on the DataPoint's clock.
    ///
    /// - Parameters:
    ///   - call: The operation.
    ///   - delay: How long from now it waits before it may start.
    /// - Returns: Its handle.
    /// - Throws: The errors of ``enqueue(_:)-(CallOperation)``.
    @discardableResult
    public nonisolated func enqueue<Operation>(
        _ call: TypedCall<Operation>, after delay: Duration
    ) async throws -> TypedHandle<Operation> {
        TypedHandle(try await enqueue(call.operation, after: delay))
    }

    /// Enqueues an input for a typed operation, on the default sequence, as one commit.
    ///
    /// - Parameters:
    ///   - type: The operation's type.
    ///   - input: The input.
    /// - Returns: Its handle.
    /// - Throws: ``RelayError`` with ``RelayError/Code/operationEncoding`` when the input does not encode, and the
    ///   errors of ``enqueue(_:)-(CallOperation)``.
    @discardableResult
    public nonisolated func enqueue<Operation: TypedOperation>(
        _ type: Operation.Type, _ input: Operation.Input
    ) async throws -> TypedHandle<Operation> {
        try await enqueue(TypedCall<Operation>(input))
    }

    /// Enqueues a typed operation and waits for its output.
    ///
    /// - Parameters:
    ///   - call: The operation.
    ///   - deadline: How long to wait (see ``execute(_:deadline:)-(CallOperation,_)``).
    /// - Returns: Its output.
    /// - Throws: The errors of ``execute(_:deadline:)-(CallOperation,_)`` and of ``TypedHandle/value``.
    public nonisolated func execute<Operation>(
        _ call: TypedCall<Operation>, deadline: Duration? = DataPoint.executeDeadline
    ) async throws -> Operation.Output {
        try TypedHandle<Operation>.output(from: try await execute(call.operation, deadline: deadline), of: call.id)
    }

    /// Enqueues an input for a typed operation, on the default sequence, and waits for its output.
    ///
    /// ```swift
    /// let sent = try await point.execute(SendWelcome.self, SendWelcome.Input(email: "ada@example.com"))
    /// ```
    ///
    /// - Parameters:
    ///   - type: The operation's type.
    ///   - input: The input.
    ///   - deadline: How long to wait (see ``execute(_:deadline:)-(CallOperation,_)``).
    /// - Returns: Its output.
    /// - Throws: ``RelayError`` with ``RelayError/Code/operationEncoding`` when the input does not encode, and the
    ///   errors of ``execute(_:deadline:)-(TypedCall<Operation>,_)``.
    public nonisolated func execute<Operation: TypedOperation>(
        _ type: Operation.Type, _ input: Operation.Input, deadline: Duration? = DataPoint.executeDeadline
    ) async throws -> Operation.Output {
        try await execute(TypedCall<Operation>(input), deadline: deadline)
    }

    /// A typed handle to a known operation, for example after a restart.
    ///
    /// - Parameters:
    ///   - id: The operation's id.
    ///   - type: The operation's type.
    /// - Returns: The handle.
    /// - Throws: ``RelayError`` with ``RelayError/Code/unknownOperation`` when no operation has this id, and
    ///   ``RelayError/Code/typeMismatch`` when it is of another kind.
    public nonisolated func handle<Operation: TypedOperation>(
        for id: UUID, as type: Operation.Type
    ) async throws -> TypedHandle<Operation> {
        let handle = try await handle(for: id)
        guard handle.record.operation.kind == Operation.kind else {
            throw RelayError(
                .typeMismatch, "operation \(id) is of kind \(handle.record.operation.kind), not \(Operation.kind)",
                operationIDs: [id])
        }
        return TypedHandle(handle)
    }
}

extension Transaction {
    /// Stages a typed operation, enqueued by the same commit as the models; its handle is the transaction's, at its
    /// staging position (see ``TypedHandle/init(_:)``).
    ///
    /// - Parameter call: The operation.
    public mutating func enqueue<Operation>(_ call: TypedCall<Operation>) {
        enqueue(call.operation)
    }
}
