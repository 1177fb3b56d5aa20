import Foundation

/// An operation defined once with typed input and output: its kind, what it takes, what it gives, and the code that
/// runs it.
///
/// Register an instance with ``DataPoint/register(_:)``, then enqueue inputs and await outputs; the input and the
/// output are stored as JSON, so an operation survives a restart like any other.
///
/// ```swift
/// struct SendWelcome: TypedOperation {
///     static let kind: CallKind = "send-welcome"
///
///     struct Input: Codable, Sendable { let email: String }
///     struct Output: Codable, Sendable { let messageID: String }
///
///     func run(_ input: Input, context: CallContext) async throws -> Output {
///         Output(messageID: try await mailer.send(to: input.email))
///     }
/// }
///
/// point.register(SendWelcome())
/// let sent = try await point.execute(SendWelcome.self, SendWelcome.Input(email: "ada@example.com"))
/// ```
///
/// A typed operation is a ``CallOperation`` underneath: it can depend on untyped operations, and they on it, and
/// both can go in one commit (see ``TypedCall/operation``).
public protocol TypedOperation: Sendable {
    /// What the operation takes; encoded to JSON when it is enqueued.
    associatedtype Input: Codable & Sendable
    /// What the operation gives; encoded to JSON when it completes.
    associatedtype Output: Codable & Sendable

    /// The kind its operations are stored and run under; one per type.
    static var kind: CallKind { get }

    /// Runs one attempt.
    ///
    /// - Parameters:
    ///   - input: The input it was enqueued with.
    ///   - context: The attempt number, the idempotency key, and the document changes to commit with the
    ///     completion.
    /// - Returns: The output, which completes the operation.
    /// - Throws: Any error; it counts as a failed attempt and is retried under the operation's retry policy.
    func run(_ input: Input, context: CallContext) async throws -> Output
}

/// Runs a typed operation's attempts as an executor: decodes the input, runs, encodes the output.
struct TypedExecutor<Operation: TypedOperation>: CallExecutor {
    let operation: Operation

    func execute(_ call: CallOperation, context: CallContext) async throws -> CallOutcome {
        let input: Operation.Input
        do {
            input = try JSONDecoder().decode(Operation.Input.self, from: call.payload)
        } catch {
            // Another attempt would read the same bytes.
            return .failed(reason: "the input does not decode as \(Operation.Input.self): \(error)")
        }
        let output = try await operation.run(input, context: context)
        do {
            return .completed(try JSONEncoder().encode(output))
        } catch {
            return .failed(reason: "the output does not encode: \(error)")
        }
    }
}
