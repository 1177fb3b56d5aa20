import Foundation

/// A handle to a typed operation, for awaiting its output.
///
/// ```swift
/// let handle = try await point.enqueue(SendWelcome.self, SendWelcome.Input(email: "ada@example.com"))
/// let sent = try await handle.value
/// ```
public struct TypedHandle<Operation: TypedOperation>: Sendable, Hashable, Identifiable {
    /// The untyped handle.
    public let handle: CallHandle

    /// The operation's id.
    public var id: UUID { handle.id }

    /// A typed view of a handle, for example one that a mixed commit or ``DataPoint/handle(for:)`` returned.
    ///
    /// - Parameter handle: The handle of an operation of kind `Operation.kind`.
    public init(_ handle: CallHandle) {
        self.handle = handle
    }

    /// The output of the completed operation.
    ///
    /// - Throws: ``RelayError`` with ``RelayError/Code/operationEncoding`` when the stored output does not decode as
    ///   `Output`, and the errors of ``CallHandle/value``.
    public var value: Operation.Output {
        get async throws {
            try Self.output(from: try await handle.value, of: id)
        }
    }

    /// A completed operation's output, decoded from what it stored.
    static func output(from encoded: Data, of id: UUID) throws(RelayError) -> Operation.Output {
        do {
            return try JSONDecoder().decode(Operation.Output.self, from: encoded)
        } catch {
            throw RelayError(
                .operationEncoding, "the output of \(id) does not decode as \(Operation.Output.self): \(error)",
                operationIDs: [id])
        }
    }

    /// The operation's terminal state, once it has one; see ``CallHandle/outcome``.
    public var outcome: CallResult {
        get async throws { try await handle.outcome }
    }

    /// The operation's current state; see ``CallHandle/status``.
    public var status: CallStatus? {
        get async throws { try await handle.status }
    }
}
