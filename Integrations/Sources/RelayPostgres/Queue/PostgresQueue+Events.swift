import Foundation
import NIOCore
import PostgresNIO
import Relay

extension PostgresQueue {
    /// A place in the event log: every event of a transaction older than `transaction`, and of that one up to
    /// `position`, is behind it.
    struct EventCursor: Sendable, Hashable {
        let transaction: Int64
        let position: Int64
    }

    /// What the event log holds after a cursor, as far as it is final.
    struct LoggedEvents: Sendable {
        /// The events of other processes, in the order they happened.
        let events: [SharedEvent]
        /// Where the next read starts.
        let cursor: EventCursor
        /// Whether the log may hold more already.
        let more: Bool
    }

    /// The place in the event log from which what is written from now on follows: no transaction still running is
    /// behind it.
    func eventCursor() async throws -> EventCursor {
        try await Self.mapping("reading the event log's end") {
            let rows = try await read(
                "reading the event log's end", "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
            let transaction = try rows.first?.decode(Int64.self) ?? 0
            return EventCursor(transaction: transaction, position: 0)
        }
    }

    /// The events after `cursor` that every transaction older than those still running wrote, oldest first, at most
    /// `limit`; those that `origin` announced itself are passed over, but for its enqueued events.
    func events(after cursor: EventCursor, except origin: UUID, limit: Int) async throws -> LoggedEvents {
        try await Self.mapping("reading the event log") {
            let rows = try await read(
                "reading the event log",
                """
                SELECT tx::text::bigint, position, origin IS NOT DISTINCT FROM \(origin), operation, sequence, kind,
                    attempts, snapshot, at, enqueued_at, started_at, finished_at,
                    CASE WHEN origin IS DISTINCT FROM \(origin) AND kind IN (5, 6) THEN coalesce(
                        result, (SELECT o.result FROM relay_operations o WHERE o.id = relay_events.operation))
                    END, reason, destination, held_until
                FROM relay_events
                WHERE (tx, position) > (\(String(cursor.transaction))::xid8, \(cursor.position))
                    AND tx < pg_snapshot_xmin(pg_current_snapshot())
                ORDER BY tx, position LIMIT \(limit)
                """)
            var events: [SharedEvent] = []
            var next = cursor
            for row in rows {
                let (
                    transaction, position, own, id, sequence, kind, attempts, snapshot, at, enqueuedAt, startedAt,
                    finishedAt, result, loggedReason, destination, heldUntil
                ) = try row.decode(
                    (
                        Int64, Int64, Bool, UUID?, String?, Int16, Int32?, Int64?, Date, Date?, Date?, Date?,
                        ByteBuffer?, String?, String?, Date?
                    ).self)
                next = EventCursor(transaction: transaction, position: position)
                // Its own enqueued events too: the DataPoint announces them when the commit answers, or from here when
                // the log is read first.
                guard !own || kind == 0 else { continue }
                let (reason, sequenceName) = (loggedReason ?? "", sequence.map(CallSequence.Name.init(rawValue:)))
                switch kind {
                case Self.suspendedEvent:
                    events.append(SharedEvent(sequenceName: sequenceName, kind: .suspended(reason: reason), date: at))
                    continue
                case Self.resumedEvent:
                    events.append(SharedEvent(sequenceName: sequenceName, kind: .resumed(reason: reason), date: at))
                    continue
                case Self.offlineEvent, Self.onlineEvent:
                    let destination = destination ?? ""
                    let happened: CallEvent.Kind =
                        kind == Self.offlineEvent
                        ? .offline(destination: destination, reason: reason)
                        : .online(destination: destination, reason: reason)
                    events.append(SharedEvent(sequenceName: nil, kind: happened, date: at))
                    continue
                default:
                    break
                }
                // Every event of an operation names it; one that does not is passed over rather than stop the reader.
                guard let id, let sequence, let attempts, let snapshot, let enqueuedAt else { continue }
                if kind == Self.heldEvent {
                    events.append(
                        SharedEvent(
                            operationID: id, sequenceName: CallSequence.Name(rawValue: sequence),
                            kind: .held(until: heldUntil, context: loggedReason), date: at))
                    continue
                }
                if let event = try Self.event(
                    kind: kind, of: id, in: sequence, attempts: attempts, snapshot: snapshot, at: at,
                    enqueuedAt: enqueuedAt, startedAt: startedAt, finishedAt: finishedAt, result: result)
                {
                    events.append(event)
                }
            }
            return LoggedEvents(events: events, cursor: next, more: rows.count >= limit)
        }
    }

    /// The terminal events of those of `ids` that ended, read from their rows: for streams that follow them where
    /// the event log was not read (see ``SharedLink/followed(among:)``).
    func endings(of ids: [UUID]) async throws -> [SharedEvent] {
        guard !ids.isEmpty else { return [] }
        return try await Self.mapping("reading outcomes") {
            var events: [SharedEvent] = []
            for row in try await read(
                "reading outcomes",
                """
                SELECT id, sequence, state, attempts, snapshot, finished_at, enqueued_at, started_at, finished_at, result
                FROM relay_operations WHERE id = ANY(\(ids)) AND state >= 3
                """)
            {
                let (id, sequence, state, attempts, snapshot, at, enqueuedAt, startedAt, finishedAt, result) =
                    try row.decode((UUID, String, Int16, Int32, Int64, Date, Date, Date?, Date?, ByteBuffer?).self)
                if let event = try Self.event(
                    kind: state, of: id, in: sequence, attempts: attempts, snapshot: snapshot, at: at,
                    enqueuedAt: enqueuedAt, startedAt: startedAt, finishedAt: finishedAt, result: result)
                {
                    events.append(event)
                }
            }
            return events
        }
    }

    /// An event as the log records it, `kind` being the operation's state after it (the log's kinds are those
    /// states); `nil` for a failure or cancellation whose result is gone (the operation was purged, or passed its
    /// retention).
    private static func event(
        kind: Int16, of id: UUID, in sequence: String, attempts: Int32, snapshot: Int64, at: Date, enqueuedAt: Date,
        startedAt: Date?, finishedAt: Date?, result: ByteBuffer?
    ) throws -> SharedEvent? {
        let metrics = CallMetrics(
            enqueuedAt: enqueuedAt, startedAt: startedAt, finishedAt: finishedAt,
            queueWait: startedAt.map { .seconds($0.timeIntervalSince(enqueuedAt)) }, attempts: Int(attempts))
        let happened: CallEvent.Kind
        switch kind {
        case 0: happened = .enqueued(snapshot: UInt64(snapshot))
        case 2: happened = .started(attempt: Int(attempts))
        case 3: happened = .completed(metrics)
        case 4: happened = .skipped(metrics)
        default:
            guard let result else { return nil }
            switch try CallResult(encoded: Data(result.readableBytesView)) {
            case .failed(let failure): happened = .failed(failure, metrics)
            case .cancelled(let cancellation): happened = .cancelled(cancellation, metrics)
            case .completed: happened = .completed(metrics)
            case .skipped: happened = .skipped(metrics)
            }
        }
        return SharedEvent(
            operationID: id, sequenceName: CallSequence.Name(rawValue: sequence), kind: happened, date: at)
    }

    /// Deletes the events written before `age` ago, by the database's clock: a process follows the log as it grows,
    /// and one that falls further behind has lost those events.
    func pruneEvents(olderThan age: Duration) async throws {
        _ = try await write(
            "pruning the event log",
            "DELETE FROM relay_events WHERE at < now() - make_interval(secs => \(Self.seconds(age)))")
    }
}
