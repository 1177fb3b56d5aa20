import Foundation

/// Which operations a listing returns: by state, sequence and kind, oldest first, one page at a time.
///
/// ```swift
/// var query = OperationQuery(states: [.failed, .cancelled], limit: 50)
/// repeat {
///     let page = try point.operations(query)
///     for status in page.statuses { print(status.id, status.state) }
///     query.after = page.next
/// } while query.after != nil
/// ```
public struct OperationQuery: Sendable, Hashable {
    /// An operation's state, as listings filter and count it.
    ///
    /// A closed enum: these cases are the whole set, and a `switch` over them needs no `default`.
    public enum State: String, Sendable, Hashable, CaseIterable {
        /// Not running yet, whatever it waits for.
        case pending
        /// An attempt is running.
        case running
        /// Finished `completed`.
        case completed
        /// Finished `skipped`.
        case skipped
        /// Finished `failed`.
        case failed
        /// Finished `cancelled`.
        case cancelled

        /// Whether the state is terminal: completed, skipped, failed or cancelled.
        public var isTerminal: Bool { self != .pending && self != .running }

        init(_ state: CallStatus.State) {
            switch state {
            case .pending: self = .pending
            case .running: self = .running
            case .finished(.completed): self = .completed
            case .finished(.skipped): self = .skipped
            case .finished(.failed): self = .failed
            case .finished(.cancelled): self = .cancelled
            }
        }
    }

    /// The states to list; empty lists every state.
    public var states: Set<State>
    /// The sequence to list, or `nil` for every sequence.
    public var sequence: CallSequence.Name?
    /// The kind to list, or `nil` for every kind.
    public var kind: CallKind?
    /// The most operations a page holds; at least 1.
    public var limit: Int
    /// Where the page starts: after the last operation of the page before; `nil` for the first page.
    public var after: OperationPage.Cursor?

    /// A query.
    ///
    /// - Parameters:
    ///   - states: The states to list; empty for all.
    ///   - sequence: The sequence, or `nil` for all.
    ///   - kind: The kind, or `nil` for all.
    ///   - limit: The most operations a page holds.
    ///   - after: The cursor of the page before, or `nil` for the first page.
    public init(
        states: Set<State> = [], sequence: CallSequence.Name? = nil, kind: CallKind? = nil, limit: Int = 100,
        after: OperationPage.Cursor? = nil
    ) {
        self.states = states
        self.sequence = sequence
        self.kind = kind
        self.limit = limit
        self.after = after
    }

    /// The dead-letter set: failed and cancelled operations, kept with their last error and last response for
    /// ``DataPoint/Configuration/deadLetterRetention`` so that they can be listed, replayed and purged.
    ///
    /// - Parameter limit: The most operations a page holds.
    /// - Returns: The query.
    public static func deadLetters(limit: Int = 100) -> OperationQuery {
        OperationQuery(states: [.failed, .cancelled], limit: limit)
    }
}

/// One page of a listing: the operations' statuses, oldest first, and where the next page starts.
public struct OperationPage: Sendable, Hashable {
    /// A place in a listing, after which the next page starts; it stays valid while operations come and go.
    ///
    /// Its text form carries it through a URL or a form, as a dashboard pages through a listing:
    ///
    /// ```swift
    /// let text = page.next?.description  // "12.0"
    /// let cursor = text.flatMap(OperationPage.Cursor.init)
    /// ```
    ///
    /// A DataPoint's cursors hold its own order of operations, and stay valid while it runs; a store that lists
    /// operations itself makes its own, such as RelayPostgres's listing of the whole fleet, ordered by commit number
    /// and place in the commit.
    public struct Cursor: Sendable, Hashable, Codable, LosslessStringConvertible {
        /// The last listed operation's place in the listing's order: a DataPoint's own order, or a commit's number.
        public let order: UInt64
        /// Its place among the operations of the same ``order``, such as its place in its commit; 0 where there is
        /// one operation for each.
        public let suborder: UInt64

        /// The place after the operation at `order` and `suborder` of a listing.
        ///
        /// - Parameters:
        ///   - order: The operation's place in the listing's order.
        ///   - suborder: Its place among the operations of the same `order`.
        public init(order: UInt64, suborder: UInt64 = 0) {
            self.order = order
            self.suborder = suborder
        }

        /// Reads the text form, `order.suborder`, such as `12.3`.
        ///
        /// - Parameter description: The text form.
        public init?(_ description: String) {
            let parts = description.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let order = UInt64(parts[0]), let suborder = UInt64(parts[1]) else { return nil }
            self.init(order: order, suborder: suborder)
        }

        /// The text form, `order.suborder`, such as `12.3`.
        public var description: String { "\(order).\(suborder)" }

        /// Reads the text form from a single value.
        ///
        /// - Parameter decoder: The decoder.
        /// - Throws: `DecodingError.dataCorrupted` for text that is not a cursor's.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let cursor = Cursor(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\(text) is not a listing's cursor, order.suborder")
            }
            self = cursor
        }

        /// Writes the text form as a single value.
        ///
        /// - Parameter encoder: The encoder.
        /// - Throws: What the encoder throws.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }
    }

    /// The operations, oldest first (in the order their commits enqueued them).
    public let statuses: [CallStatus]
    /// Where the next page starts, or `nil` when this is the last.
    public let next: Cursor?

    /// A page, as a store that lists operations itself answers.
    ///
    /// - Parameters:
    ///   - statuses: The operations, oldest first.
    ///   - next: Where the next page starts, or `nil` for the last.
    public init(statuses: [CallStatus], next: Cursor?) {
        self.statuses = statuses
        self.next = next
    }
}
