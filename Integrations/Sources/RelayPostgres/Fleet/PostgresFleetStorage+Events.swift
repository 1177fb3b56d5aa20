import Foundation
import Logging
import Relay

extension PostgresFleetStorage {
    /// Follows the fleet's event log each time it is woken, and publishes what other processes did to the DataPoint's
    /// event streams, until the task is cancelled.
    ///
    /// It starts at the log's end when the store opened. While no stream of every event is open here, it only moves
    /// its place on, on the polling timer's wakes: a stream opened later starts at most a polling interval before it
    /// opened, and misses nothing after.
    ///
    /// A stream of one operation that another process runs, opened after its end passed this process's place in the
    /// log, or whose end a transaction still open holds back in the log, would wait: once the log has been read, the
    /// operations such streams follow that have ended get their terminal events from their rows, after one more read
    /// of the log, which delivers them itself unless they were passed or are held back.
    func followEvents(for link: SharedLink, on wakes: AsyncStream<Void>) async {
        var cursor = eventsAtOpen.withLock { $0 }
        var pause = Self.firstPause
        for await _ in wakes {
            do {
                try await followEvents(from: &cursor, for: link)
                pause = Self.firstPause
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning("reading the event log failed; trying again", metadata: ["error": "\(error)"])
                guard await pausedAfterFailure(&pause) else { return }
                wakeEvents(for: link, always: true)
            }
        }
    }

    /// Reads and publishes what the log holds after `cursor`, or only finds the log's end while nothing follows every
    /// event here, moving `cursor` past what it published even when a later read fails.
    private func followEvents(from cursor: inout PostgresQueue.EventCursor?, for link: SharedLink) async throws {
        var from: PostgresQueue.EventCursor
        switch (cursor, link.followsEvents) {
        case (let known?, true):
            from = known
        case (let known, _):
            // The end is read before the look at the streams: one opened during the read reads from the place before.
            let end = try await queue.eventCursor()
            guard link.followsEvents, let known else {
                link.publish([])
                cursor = end
                return
            }
            from = known
        }
        defer { cursor = from }
        try await readEvents(from: &from, for: link)
        let followed = link.followedElsewhere
        guard !followed.isEmpty else { return }
        let endings = try await queue.endings(of: followed)
        guard !endings.isEmpty else { return }
        try await readEvents(from: &from, for: link)
        let stillFollowed = Set(link.followedElsewhere)
        link.publish(endings.filter { $0.operationID.map(stillFollowed.contains) == true })
    }

    /// Reads the log from `cursor` up to what is final, publishing other processes' events and moving `cursor` past
    /// each read.
    private func readEvents(from cursor: inout PostgresQueue.EventCursor, for link: SharedLink) async throws {
        var more = true
        while more, !Task.isCancelled {
            let logged = try await queue.events(after: cursor, except: owner, limit: Self.eventsPerRead)
            link.publish(logged.events)
            cursor = logged.cursor
            more = logged.more
        }
    }

    /// Wakes the loop that follows the event log: on the polling timer always, on a notification only while a stream
    /// of every event is open here.
    func wakeEvents(for link: SharedLink, always: Bool) {
        guard always || link.followsEvents else { return }
        _ = running.withLock { $0?.events.yield() }
    }

    private static let eventsPerRead = 1000
}
