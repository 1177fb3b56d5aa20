import Foundation
import Relay

/// A page of a store's operations, as ``StoreQueries`` reads them.
public struct StoredPage: Sendable {
    /// The operations, oldest commit first.
    public var operations: [StoredOperation]
    /// Those of them that a process runs now.
    public var running: Set<UUID>
    /// Where the next page starts, or `nil` after the last.
    public var next: OperationPage.Cursor?

    /// A page.
    ///
    /// - Parameters:
    ///   - operations: The operations, oldest commit first.
    ///   - running: Those of them that a process runs now.
    ///   - next: Where the next page starts, or `nil` after the last.
    public init(operations: [StoredOperation], running: Set<UUID>, next: OperationPage.Cursor?) {
        self.operations = operations
        self.running = running
        self.next = next
    }
}
