/// The name of an executor kind: which ``CallExecutor`` runs an operation.
///
/// Register an executor for a kind with ``DataPoint/register(_:for:)`` before enqueueing operations of that kind.
///
/// ```swift
/// extension CallKind {
///     static let sendEmail: CallKind = "send-email"
/// }
/// ```
public struct CallKind: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    /// The kind's name as written.
    public let rawValue: String

    /// Creates a kind from its name.
    ///
    /// - Parameter rawValue: The kind's name.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates a kind from a string literal.
    ///
    /// - Parameter value: The kind's name.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// The kind's name.
    public var description: String { rawValue }
}
