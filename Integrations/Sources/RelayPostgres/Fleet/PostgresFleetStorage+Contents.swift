import Foundation
import Logging
import PostgresNIO
import Relay

extension PostgresFleetStorage {
    /// The stored operations of the whole fleet that `query` selects, oldest commit first, one page, read in one
    /// snapshot of the database while the fleet runs, with those of them that a process runs now: what a tool such as
    /// the `relay` command lists and shows.
    ///
    /// It selects as ``operations(_:of:deadline:)`` does, and gives each operation as it is stored: its request, its
    /// attempts and its outcome. It changes nothing, and a database that Relay has not set up holds none.
    ///
    /// ```swift
    /// var query = OperationQuery(states: [.failed], limit: 500)
    /// repeat {
    ///     let page = try await PostgresFleetStorage.storedOperations(query, of: client)
    ///     for stored in page.operations { print(stored.operation.id, stored.attempts) }
    ///     query.after = page.next
    /// } while query.after != nil
    /// ```
    ///
    /// - Parameters:
    ///   - query: The states, sequence and kind to list, and the page.
    ///   - client: A running client of the database.
    ///   - deadline: How long it waits for the database.
    /// - Returns: The page's operations, those of them that run, and where the next page starts.
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidArgument`` when the limit is below 1,
    ///   ``RelayError/Code/storageFailure``, or ``RelayError/Code/corruptStore`` for a row that no Relay writes.
    public static func storedOperations(
        _ query: OperationQuery = OperationQuery(), of client: PostgresClient, deadline: Duration = .seconds(30)
    ) async throws -> (operations: [StoredOperation], running: Set<UUID>, next: OperationPage.Cursor?) {
        try await PostgresQueue(client: client, logger: Logger(label: "RelayPostgres"), deadline: deadline)
            .storedOperations(query)
    }

    /// The stored operations whose id, in lowercase with its hyphens, starts with `prefix`, oldest commit first, with
    /// those of them that a process runs now: how a person names an operation to a tool.
    ///
    /// A prefix that no id can start with (a character other than a lowercase hexadecimal digit, a hyphen out of its
    /// place, or more than 36 characters) finds none. The ids of a prefix are one range of the primary key: the
    /// database reads those alone, but all of them for a short prefix, before it keeps the oldest `limit`.
    ///
    /// - Parameters:
    ///   - prefix: The start of an id, such as `3f2a`.
    ///   - client: A running client of the database.
    ///   - limit: The most operations it returns; at least 1.
    ///   - deadline: How long it waits for the database.
    /// - Returns: The operations and those of them that run.
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidArgument`` when the limit is below 1,
    ///   ``RelayError/Code/storageFailure``, or ``RelayError/Code/corruptStore`` for a row that no Relay writes.
    public static func storedOperations(
        withIDPrefix prefix: String, of client: PostgresClient, limit: Int = 100, deadline: Duration = .seconds(30)
    ) async throws -> (operations: [StoredOperation], running: Set<UUID>) {
        try await PostgresQueue(client: client, logger: Logger(label: "RelayPostgres"), deadline: deadline)
            .storedOperations(withIDPrefix: prefix, limit: limit)
    }

    /// The operations of the whole fleet that `query` selects, oldest commit first, one page; the next page starts at
    /// ``Relay/OperationPage/next``.
    ///
    /// A DataPoint's own ``Relay/DataPoint/operations(_:)`` lists what its process knows: what it enqueued, runs, or
    /// heard of. This lists what the database holds, whichever process enqueued or ran it, in one snapshot of the
    /// database: the fleet's dead letters, for one, to replay or purge from any process. An operation waiting for its
    /// dependencies lists as pending, and finished ones as long as the fleet keeps them. Its cursors order operations
    /// by commit number and place in the commit; a DataPoint's own listing does not read them. It changes nothing, and
    /// a database that Relay has not set up holds none.
    ///
    /// ```swift
    /// var query = OperationQuery.deadLetters(limit: 50)
    /// repeat {
    ///     let page = try await PostgresFleetStorage.operations(query, of: client)
    ///     for status in page.statuses { print(status.id, status.state) }
    ///     query.after = page.next
    /// } while query.after != nil
    /// ```
    ///
    /// States and sequences are selected by the database; the kind is kept inside each operation's encoded form, so a
    /// query of a kind reads the operations after the cursor until its page is full. Each page sorts the operations
    /// it reads past: it suits a tool or a dashboard, not a hot path.
    ///
    /// - Parameters:
    ///   - query: The states, sequence and kind to list, and the page.
    ///   - client: A running client of the database.
    ///   - deadline: How long it waits for the database.
    /// - Returns: The page.
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidArgument`` when the limit is below 1,
    ///   ``RelayError/Code/storageFailure``, or ``RelayError/Code/corruptStore`` for a row that no Relay writes.
    public static func operations(
        _ query: OperationQuery = OperationQuery(), of client: PostgresClient, deadline: Duration = .seconds(30)
    ) async throws -> OperationPage {
        try await PostgresQueue(client: client, logger: Logger(label: "RelayPostgres"), deadline: deadline)
            .operations(query)
    }

    /// How many operations the whole fleet holds in each state, of one sequence when given; states with none are left
    /// out.
    ///
    /// A DataPoint's own ``Relay/DataPoint/operationCounts(sequence:kind:)`` counts what its process knows: what it
    /// enqueued, runs, or heard of. This counts what the database holds, in one statement, whichever process enqueued
    /// or ran it: an operation waiting for its dependencies counts as pending, and finished ones as long as the fleet
    /// keeps them. It changes nothing, and a database that Relay has not set up holds none.
    ///
    /// ```swift
    /// let counts = try await PostgresFleetStorage.operationCounts(of: client, sequence: "webhooks")
    /// ```
    ///
    /// - Parameters:
    ///   - client: A running client of the database.
    ///   - sequence: The sequence, or `nil` for all.
    ///   - deadline: How long it waits for the database.
    /// - Returns: The counts by state.
    /// - Throws: ``RelayError`` with ``RelayError/Code/storageFailure``.
    public static func operationCounts(
        of client: PostgresClient, sequence: CallSequence.Name? = nil, deadline: Duration = .seconds(30)
    ) async throws -> [OperationQuery.State: Int] {
        try await PostgresQueue(client: client, logger: Logger(label: "RelayPostgres"), deadline: deadline)
            .operationCounts(sequence: sequence)
    }

    /// The whole fleet's metrics: counts per sequence and state, what runs, and the percentiles of queue wait and run
    /// time over the `window` operations that finished last, whichever process enqueued or ran them.
    ///
    /// A DataPoint's own ``Relay/DataPoint/metrics()`` covers what its process knows, and counts finished operations
    /// since it opened. This reads the database, the sequences and their counts, then the percentiles, which a window
    /// of 0 leaves out (`relay status` reads no more than the counts): finished operations count while the fleet keeps
    /// them (see ``Relay/DataPoint/Configuration/retention``), queue wait runs from enqueue to first start, and run
    /// time is what the process that ran an operation reported of its attempts (an operation no attempt ended, such as
    /// one cancelled while it waited, has none). It changes nothing; a database that Relay has not set up holds none.
    ///
    /// ```swift
    /// let fleet = try await PostgresFleetStorage.metrics(of: client)
    /// let failed = fleet.sequences["webhooks"]?.failed ?? 0
    /// ```
    ///
    /// - Parameters:
    ///   - client: A running client of the database.
    ///   - window: How many of the last finished operations the percentiles cover; 0 reads the counts alone, and
    ///     leaves the percentiles empty.
    ///   - deadline: How long it waits for the database.
    /// - Returns: The metrics; no events are dropped in a database, so ``Relay/MetricsSnapshot/droppedEvents`` is 0.
    /// - Throws: ``RelayError`` with ``RelayError/Code/invalidArgument`` for a negative window, and
    ///   ``RelayError/Code/storageFailure``.
    public static func metrics(
        of client: PostgresClient, window: Int = 10_000, deadline: Duration = .seconds(30)
    ) async throws -> MetricsSnapshot {
        try await PostgresQueue(client: client, logger: Logger(label: "RelayPostgres"), deadline: deadline)
            .metrics(window: window)
    }
}
