import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import Relay

/// The query in flight on a connection, failed at once if the connection closes before it is answered; on a pool's
/// connection, also once the task that waits for it is cancelled, at a deadline say, which closes the connection.
///
/// postgres-nio 1.33.2 never answers a query sent on a connection that has just closed, one a restarted server or an
/// administrator ended, and its queries do not end when their task is cancelled; no query of a store may leave the
/// task that waits for it waiting for ever. One callback on the connection's close covers every query it runs, one at
/// a time.
final class PostgresQueryGuard: Sendable {
    /// The query in flight, and whether the connection is closing.
    ///
    /// Closing: its close's callback has run, or this guard has closed it. A query registered then would wait for
    /// ever, and the connection may not say it is closed yet.
    private struct State {
        var promise: EventLoopPromise<PostgresQueryResult>?
        var closed = false
    }

    /// Thrown, once the connection has closed, by a query of a pool's connection never sent since the connection was
    /// closing, or by a first statement that found it lost (``opening(_:)``): a pool lends a connection that has
    /// stopped until its close callbacks run, and the work can run again on another.
    struct Unsent: Error {}

    private let inFlight = NIOLockedValueBox(State())
    private let connection: PostgresConnection
    /// Whether a query is abandoned when its task is cancelled: a pool's connection can be closed and replaced, while
    /// a store's own connection finishes the write in flight for the task that waits next.
    private let abandonsWhenCancelled: Bool

    init(_ connection: PostgresConnection, abandonsWhenCancelled: Bool) {
        self.connection = connection
        self.abandonsWhenCancelled = abandonsWhenCancelled
        connection.closeFuture.whenComplete { [inFlight] _ in
            let orphan = inFlight.withLockedValue { state in
                defer { state = State(promise: nil, closed: true) }
                return state.promise
            }
            orphan?.fail(Self.closed)
        }
    }

    private static let closed = RelayError(
        .storageFailure, "the Relay store's connection to the database closed before the query was answered")

    /// Sends `query` and returns once the database answers it, or throws once the connection closes.
    func run(_ query: PostgresQuery, logger: Logger) async throws {
        _ = try await result(of: query, logger: logger)
    }

    /// Sends `query` and returns its rows once the database answers it, or throws once the connection closes (or the
    /// task is cancelled, if the guard abandons queries then).
    func result(of query: PostgresQuery, logger: Logger) async throws -> PostgresQueryResult {
        let connection = connection
        let promise = inFlight.withLockedValue { state -> EventLoopPromise<PostgresQueryResult>? in
            guard !state.closed, !connection.isClosed else { return nil }
            let promise = connection.eventLoop.makePromise(of: PostgresQueryResult.self)
            state.promise = promise
            return promise
        }
        guard let promise else {
            guard abandonsWhenCancelled else { throw Self.closed }
            // The pool learns of a close from the connection's close callbacks, which may run a moment after it
            // stopped: given back before then, it would be lent again at once.
            try? await waitUntilClosed()
            throw Unsent()
        }
        connection.query(query, logger: logger).whenComplete { [inFlight] result in
            if Self.take(promise, from: inFlight) { promise.completeWith(result) }
        }
        guard abandonsWhenCancelled else { return try await promise.futureResult.get() }
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: { [inFlight] in
            // A deadline passed: the answer may never come, and a connection with a query in flight cannot run
            // another, so the connection is closed and its pool opens another.
            let taken = inFlight.withLockedValue { state in
                guard state.promise?.futureResult === promise.futureResult else { return false }
                state = State(promise: nil, closed: true)
                return true
            }
            guard taken else { return }
            // Failed once closed: the connection goes back to its pool only then, and is lent to nobody else.
            connection.close().whenComplete { _ in promise.fail(Self.abandoned) }
        }
    }

    /// The value of `body`, run between `BEGIN` and `COMMIT` on this connection, or rolled back when it throws.
    ///
    /// Only the answer to `COMMIT` says that the transaction is durable: the database answers a statement before the
    /// implicit transaction around it commits. Only a `BEGIN` unsent, or lost with its connection, throws ``Unsent``:
    /// once it is answered, the transaction's fate is the connection's.
    func transaction<Value: Sendable>(logger: Logger, _ body: () async throws -> Value) async throws -> Value {
        try await opening { try await run("BEGIN", logger: logger) }
        do {
            let value = try await body()
            try await run("COMMIT", logger: logger)
            return value
        } catch is Unsent {
            throw Self.closed
        } catch {
            try? await run("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// The value of `first`, the first statement of a lending that changes nothing unless a later one commits it (a
    /// `BEGIN`, a read); a connection found lost by it throws ``Unsent`` once closed, so that the work runs on another.
    ///
    /// A server that ended a pool's idle connections, restarted say, is found out by the next statement sent on each:
    /// the call that sent it asked for nothing that happened, and waits for a live connection instead of failing.
    func opening<Value: Sendable>(_ first: () async throws -> Value) async throws -> Value {
        do {
            return try await first()
        } catch {
            guard abandonsWhenCancelled, Self.isLost(error) else { throw error }
            try? await waitUntilClosed()
            throw Unsent()
        }
    }

    /// Whether `error` says the connection is gone: it broke, the server ended it, or it closed before answering.
    private static func isLost(_ error: any Error) -> Bool {
        if let error = error as? RelayError { return error == closed }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown: return true
        // Class 57P: the server is shutting the session down (an administrator's command, a crash, a restart).
        case .server: return error.serverInfo?[.sqlState]?.hasPrefix("57P") == true
        default: return false
        }
    }

    /// Whether `promise` was the one in flight, which it no longer is.
    private static func take(
        _ promise: EventLoopPromise<PostgresQueryResult>, from inFlight: NIOLockedValueBox<State>
    ) -> Bool {
        inFlight.withLockedValue { state in
            guard state.promise?.futureResult === promise.futureResult else { return false }
            state.promise = nil
            return true
        }
    }

    private static let abandoned = RelayError(
        .storageFailure, "the Relay store abandoned a query the database had not answered, and closed its connection")

    /// Returns once the connection closes, or throws `CancellationError` once the task is cancelled first.
    func waitUntilClosed() async throws {
        let promise = connection.eventLoop.makePromise(of: Void.self)
        connection.closeFuture.cascade(to: promise)
        try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            promise.fail(CancellationError())
        }
    }
}
