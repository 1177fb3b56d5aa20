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
    let withQueries: Opening<any StoreQueries>
    let withDataPoint: Opening<DataPoint>

    /// Runs a body with what a store at a URL opens, closes it after, and returns what the body returns: an exit
    /// status.
    public typealias Opening<Opened> =
        @Sendable (URL, @Sendable (Opened) async throws -> Int32) async throws -> Int32

    /// A kind of store.
    ///
    /// - Parameters:
    ///   - scheme: The URL scheme it reaches, such as `postgres`.
    ///   - withQueries: Runs a body with the queries of the store at a URL, which read it while other processes run
    ///     on it, and closes what they hold after; returns what the body returns, an exit status.
    ///   - withDataPoint: Runs a body with a DataPoint open on the store at a URL, one that runs nothing, and closes
    ///     it after; returns what the body returns, an exit status.
    public init(
        scheme: String,
        withQueries: @escaping Opening<any StoreQueries>,
        withDataPoint: @escaping Opening<DataPoint>
    ) {
        self.scheme = scheme
        self.withQueries = withQueries
        self.withDataPoint = withDataPoint
    }
}
