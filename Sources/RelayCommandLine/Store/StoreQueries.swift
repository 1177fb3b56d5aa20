import Foundation
import Relay

/// What `relay status`, `list`, `show`, `events`, `cancel` and `replay` ask of a store that a URL names, such as a
/// fleet's database, while other processes run on it.
///
/// The command reads a folder whole; a store that a URL names answers counts, and operations a page at a time, so that
/// a store of millions of operations is read in bounded memory and within the command's deadline.
public protocol StoreQueries: Sendable {
    /// The store's counts per sequence and state.
    ///
    /// Its ``Relay/MetricsSnapshot/running`` says whether a process runs on the store now; the command reads no
    /// percentile.
    func metrics() async throws -> MetricsSnapshot

    /// The operations that `query` selects, oldest commit first, one page.
    ///
    /// - Parameter query: The states and sequence to list, the page's size, and where it starts.
    /// - Returns: The page, with where the next one starts.
    /// - Throws: What the store throws when it cannot be read.
    func operations(_ query: OperationQuery) async throws -> StoredPage

    /// The operations whose id, in lowercase with its hyphens, starts with `prefix`, oldest commit first.
    ///
    /// - Parameters:
    ///   - prefix: The start of an id, such as `3f2a`; one that no id can start with finds none.
    ///   - limit: The most operations the page holds.
    /// - Returns: The page; its `next` is not read.
    /// - Throws: What the store throws when it cannot be read.
    func operations(withIDPrefix prefix: String, limit: Int) async throws -> StoredPage
}
