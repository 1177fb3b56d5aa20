import Foundation

/// One typed operation to enqueue: an input, and where and how it runs.
///
/// ```swift
/// let resize = try TypedCall<Resize>(Resize.Input(image: id, width: 320), sequenceName: .uploads)
/// let notify = CallOperation(kind: "notify", dependencies: [resize.id])
/// let handles = try await point.enqueue([resize.operation, notify])
/// let thumbnail = try await TypedHandle<Resize>(handles[0]).value
/// ```
public struct TypedCall<Operation: TypedOperation>: Sendable, Identifiable {
    /// The operation as the engine stores it, with the input encoded in its payload: for mixed commits and
    /// dependencies on untyped operations.
    public internal(set) var operation: CallOperation

    /// The operation's id.
    public var id: UUID { operation.id }

    /// The input, encoded to JSON, with everything an untyped operation takes.
    ///
    /// - Parameters:
    ///   - input: The input.
    ///   - id: The operation's identity; by default a new random UUID.
    ///   - sequenceName: The sequence that runs it.
    ///   - dependencies: Operations, typed or not, that must finish first.
    ///   - priority: A soft hint among ready operations of the same sequence; higher starts first.
    ///   - retryPolicy: How failed attempts are retried.
    ///   - onDependencyFailure: What happens when a dependency fails or is cancelled.
    ///   - idempotencyKey: A stable deduplication key; derived from `id` when `nil`.
    /// - Throws: ``RelayError`` with ``RelayError/Code/operationEncoding`` when the input does not encode.
    public init(
        _ input: Operation.Input,
        id: UUID = RandomUUIDs.next(),
        sequenceName: CallSequence.Name = .data,
        dependencies: Set<UUID> = [],
        priority: Int = 0,
        retryPolicy: RetryPolicy = .default,
        onDependencyFailure: CallOperation.DependencyFailurePolicy = .cancel,
        idempotencyKey: String? = nil
    ) throws {
        let payload: Data
        do {
            payload = try JSONEncoder().encode(input)
        } catch {
            throw RelayError(
                .operationEncoding, "the input of \(Operation.kind) does not encode: \(error)", operationIDs: [id])
        }
        operation = CallOperation(
            id: id, kind: Operation.kind, sequenceName: sequenceName, dependencies: dependencies, priority: priority,
            payload: payload, retryPolicy: retryPolicy, onDependencyFailure: onDependencyFailure,
            idempotencyKey: idempotencyKey)
    }

    /// The input, decoded from the operation's payload.
    ///
    /// - Throws: ``RelayError`` with ``RelayError/Code/operationEncoding`` when the payload does not decode as `Input`.
    public var input: Operation.Input {
        get throws {
            do {
                return try JSONDecoder().decode(Operation.Input.self, from: operation.payload)
            } catch {
                throw RelayError(
                    .operationEncoding, "the payload of \(id) does not decode as \(Operation.Input.self): \(error)",
                    operationIDs: [id])
            }
        }
    }
}

extension TypedCall {
    /// Makes this operation wait for the operation with this id, typed or not.
    ///
    /// - Parameter id: The id of the operation that must finish first.
    public mutating func addDependency(_ id: UUID) {
        operation.addDependency(id)
    }

    /// Makes this operation wait for each of the operations with these ids, typed or not.
    ///
    /// - Parameter ids: The ids of the operations that must finish first.
    public mutating func addDependencies(_ ids: some Sequence<UUID>) {
        operation.addDependencies(ids)
    }
}
