import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresNIO
import Relay

/// The write in flight on a store's connection, failed at once if the connection closes before it is answered.
///
/// postgres-nio 1.33.2 never answers a query sent on a connection that has just closed, one a restarted server or an
/// administrator ended; the store's only connection must not leave a write, and every task that waits for it,
/// waiting for ever. One callback on the connection's close covers every write.
final class PostgresWriteGuard: Sendable {
    private let inFlight = NIOLockedValueBox<EventLoopPromise<Void>?>(nil)
    private let connection: PostgresConnection

    init(_ connection: PostgresConnection) {
        self.connection = connection
        connection.closeFuture.whenComplete { [inFlight] _ in
            let orphan = inFlight.withLockedValue { promise in
                defer { promise = nil }
                return promise
            }
            orphan?.fail(Self.closed)
        }
    }

    private static let closed = RelayError(
        .storageFailure, "the Relay store's connection to the database closed before the write was answered")

    /// Sends `query` and returns once the database answers it, or throws once the connection closes.
    func run(_ query: PostgresQuery, logger: Logger) async throws {
        let connection = connection
        let promise = inFlight.withLockedValue { current -> EventLoopPromise<Void>? in
            // Closed already: the close's callback has run, or runs on nothing.
            guard !connection.isClosed else { return nil }
            let promise = connection.eventLoop.makePromise(of: Void.self)
            current = promise
            return promise
        }
        guard let promise else { throw Self.closed }
        connection.query(query, logger: logger).whenComplete { [inFlight] result in
            let mine = inFlight.withLockedValue { current -> Bool in
                guard current?.futureResult === promise.futureResult else { return false }
                current = nil
                return true
            }
            if mine { promise.completeWith(result.map { _ in () }) }
        }
        try await promise.futureResult.get()
    }
}
