import Foundation

/// A change to the document committed to a shared store, with the version the store gave it.
///
/// A shared store numbers every commit fleet-wide, in the order the commits became durable; a change carries its
/// commit's number. A DataPoint applies a change to a model only when it is later than the one it holds of that
/// model, so that its own commits, applied as they return, and other processes', applied as the store follows them,
/// leave every process with the model of the latest commit.
public struct SharedModelChange: Sendable, Hashable {
    /// The model upserted or removed, or the key-value set or removed.
    public let change: ModelChange
    /// The number of the commit that made the change, fleet-wide.
    public let version: UInt64

    /// A change and its commit's number.
    ///
    /// - Parameters:
    ///   - change: The change.
    ///   - version: The number of the commit that made it.
    public init(_ change: ModelChange, version: UInt64) {
        self.change = change
        self.version = version
    }
}
