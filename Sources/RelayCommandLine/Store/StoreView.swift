import Foundation
import Relay

/// The store a command reads: a folder, read whole without opening it, or a store that a URL names, which answers
/// queries a page at a time.
enum StoreView: Sendable {
    case folder(StoreReader)
    case remote(name: String, queries: any StoreQueries)

    /// How many operations a page of a store that a URL names holds.
    static let pageSize = 500

    /// Runs `body` with the view of `store`; what a store that a URL names holds open lasts as long as the body.
    static func with(
        _ store: StoreLocation, _ body: @escaping @Sendable (StoreView) async throws -> ExitStatus
    ) async throws -> ExitStatus {
        switch store {
        case .folder(let folder):
            return try await body(.folder(try StoreReader(folder: folder)))
        case .remote(let url, let kind):
            let status = try await kind.withQueries(url) { queries in
                try await body(.remote(name: store.name, queries: queries)).rawValue
            }
            return ExitStatus(rawValue: status) ?? .failure
        }
    }

    /// What `relay status` shows: the plans and the counts.
    func summary() async throws -> StoreReader {
        switch self {
        case .folder(let reader): reader
        case .remote(let name, let queries): StoreReader(name: name, metrics: try await queries.metrics())
        }
    }

    /// Calls `body` with the operations of `state` and `sequence`, oldest commit first: a folder's at once, a remote
    /// store's a page at a time, each with a reader that formats them.
    func forEachPage(
        state: OperationQuery.State?, sequence: String?,
        _ body: (StoreReader, [StoreReader.Entry]) throws -> Void
    ) async throws {
        func selected(_ entry: StoreReader.Entry) -> Bool {
            (state == nil || entry.state == state) && (sequence == nil || entry.sequence == sequence)
        }
        switch self {
        case .folder(let reader):
            try body(reader, reader.entries.filter(selected))
        case .remote(let name, let queries):
            var query = OperationQuery(
                states: state.map { [$0] } ?? [], sequence: sequence.map { CallSequence.Name(rawValue: $0) },
                limit: Self.pageSize)
            repeat {
                let page = try await queries.operations(query)
                let reader = StoreReader(name: name, page: page)
                try body(reader, reader.entries)
                query.after = page.next
            } while query.after != nil
        }
    }

    /// The operation that `text` names, an id or the start of one (or, in a folder, a call's name), with a reader
    /// that formats it.
    func entry(_ text: String) async throws -> (reader: StoreReader, entry: StoreReader.Entry) {
        switch self {
        case .folder(let reader):
            return (reader, try reader.entry(text))
        case .remote(let name, let queries):
            let page = try await queries.operations(withIDPrefix: text.lowercased(), limit: Self.pageSize)
            let reader = StoreReader(name: name, page: page)
            return (reader, try reader.entry(text))
        }
    }

    /// Prints the store's history as JSON lines: a folder's in time order; a remote store's a page at a time, oldest
    /// commit first, each operation's events together.
    func printHistory() async throws {
        switch self {
        case .folder(let reader):
            for line in reader.history() { Output.line(line) }
        case .remote:
            try await forEachPage(state: nil, sequence: nil) { reader, entries in
                for entry in entries {
                    for line in reader.events(of: entry) { Output.line(line) }
                }
            }
        }
    }
}
