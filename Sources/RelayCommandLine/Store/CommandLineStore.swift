import Foundation
import Relay

/// A kind of store that `relay` reaches through a URL given to `--store`, such as `postgres://…`.
///
/// The command reads folders itself. A package that brings another store builds its own `relay` command on
/// ``RelayCommand/run(_:stores:)`` with one of these, and `relay` runs that command for a URL of its scheme when it
/// lies beside it, named `relay-<scheme>`.
public struct CommandLineStore: Sendable {
    /// The URL scheme it reaches, such as `postgres`.
    public let scheme: String
    let read: @Sendable (URL) async throws -> StoreContents
    let withDataPoint: @Sendable (URL, @Sendable (DataPoint) async throws -> Int32) async throws -> Int32

    /// A kind of store.
    ///
    /// - Parameters:
    ///   - scheme: The URL scheme it reaches, such as `postgres`.
    ///   - read: What the store at a URL holds, read while other processes run on it.
    ///   - withDataPoint: Runs a body with a DataPoint open on the store at a URL, one that runs nothing, and closes
    ///     it after; returns what the body returns, an exit status.
    public init(
        scheme: String,
        read: @escaping @Sendable (URL) async throws -> StoreContents,
        withDataPoint: @escaping @Sendable (URL, @Sendable (DataPoint) async throws -> Int32) async throws -> Int32
    ) {
        self.scheme = scheme
        self.read = read
        self.withDataPoint = withDataPoint
    }
}
