import Foundation
import Logging
import PostgresNIO
import Relay

extension PostgresFleetStorage {
    /// Listens for ready and finished work and for cancellations, listening again after the connection is lost; after
    /// each (re)start it looks up what it may have missed.
    func listen(for link: SharedLink) async {
        var pause = Self.firstPause
        while !Task.isCancelled {
            do {
                try await queue.client.withConnection { connection in
                    try await connection.listen(on: PostgresQueue.readyChannel) { ready in
                        try await connection.listen(on: PostgresQueue.finishedChannel) { finished in
                            try await connection.listen(on: PostgresQueue.cancelChannel) { cancels in
                                try await connection.listen(on: PostgresQueue.eventsChannel) { events in
                                    try await connection.listen(on: PostgresQueue.modelsChannel) { document in
                                        pause = Self.firstPause
                                        try await self.heard(
                                            Notifications(
                                                ready: ready, finished: finished, cancels: cancels, events: events,
                                                document: document),
                                            on: connection, for: link)
                                    }
                                }
                            }
                        }
                    }
                }
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning("listening failed; listening again", metadata: ["error": "\(error)"])
            }
            // A connection lost is listened on again at once; a database that refuses is tried again after a pause.
            try? await clock.sleep(for: pause)
            pause = min(pause * 2, options.pollInterval)
        }
    }

    /// What each channel the store listens on announces.
    private struct Notifications {
        let ready: PostgresNotificationSequence
        let finished: PostgresNotificationSequence
        let cancels: PostgresNotificationSequence
        let events: PostgresNotificationSequence
        let document: PostgresNotificationSequence
    }

    /// Acts on what the channels announce until the connection closes: first on what was missed while nobody
    /// listened, then on each notification.
    private func heard(
        _ notifications: Notifications, on connection: PostgresConnection, for link: SharedLink
    ) async throws {
        let (ready, finished, cancels, events, document) = (
            notifications.ready, notifications.finished, notifications.cancels, notifications.events,
            notifications.document
        )
        defer { backstop.withLock { $0.lostListener() } }
        wakeClaims()
        wakeEvents(for: link, always: false)
        wakeDocument()
        try await settleAwaited(link.awaited, for: link)
        backstop.withLock { $0.listened() }
        try await cancelRequested(for: link)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                for try await note in ready {
                    if note.payload == PostgresQueue.offlineNotice { self.offlineKnown.withLock { $0 = true } }
                    self.wakeClaims()
                }
            }
            group.addTask { for try await _ in events { self.wakeEvents(for: link, always: false) } }
            group.addTask { for try await _ in document { self.wakeDocument() } }
            group.addTask {
                for try await note in finished {
                    // What ended under a claim of this process's is settled by the process itself, without a read.
                    let ended = self.held.withLock { held in
                        note.payload.split(separator: ",").compactMap { UUID(uuidString: String($0)) }
                            .filter { held[$0] == nil }
                    }
                    try await self.settleAwaited(link.awaited(among: ended), for: link)
                }
            }
            group.addTask {
                for try await note in cancels {
                    guard let id = UUID(uuidString: note.payload), self.held.withLock({ $0[id] != nil }) else {
                        continue
                    }
                    await link.cancel([id])
                }
            }
            // postgres-nio may leave the notifications of a connection that closed waiting for ever.
            group.addTask {
                try await self.queue.guards.guarding(connection).waitUntilClosed()
                throw RelayError(.storageFailure, "the connection listened on has closed")
            }
        }
    }
}
