import Foundation
import Logging
import Relay

extension PostgresFleetStorage {
    /// Follows the fleet's event log each time it is woken, and publishes what other processes did to the DataPoint's
    /// event streams, until the task is cancelled.
    ///
    /// While no stream of every event is open here, it only moves its place on, on the polling timer's wakes: a
    /// stream opened later starts at most a polling interval before it opened, and misses nothing after.
    func followEvents(for link: SharedLink, on wakes: AsyncStream<Void>) async {
        var cursor: PostgresQueue.EventCursor?
        for await _ in wakes {
            do {
                guard link.followsEvents, var from = cursor else {
                    link.publish([])
                    cursor = try await queue.eventCursor()
                    continue
                }
                var more = true
                while more, !Task.isCancelled {
                    let logged = try await queue.events(after: from, except: owner, limit: Self.eventsPerRead)
                    link.publish(logged.events)
                    from = logged.cursor
                    cursor = from
                    more = logged.more
                }
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning("reading the event log failed; polling retries", metadata: ["error": "\(error)"])
            }
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
