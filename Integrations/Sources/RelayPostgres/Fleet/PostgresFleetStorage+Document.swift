import Foundation
import Relay

extension PostgresFleetStorage {
    /// Follows the fleet's document each time it is woken, and applies what other processes changed to the
    /// DataPoint's, until the task is cancelled: every process holds all of it.
    ///
    /// A process that has fallen behind what the fleet keeps of removals (cut off from the database for longer than
    /// ``Options/eventRetention``) reads the whole document again, and the DataPoint drops what was removed meanwhile.
    func followDocument(for link: SharedLink, on wakes: AsyncStream<Void>) async {
        var pause = Self.firstPause
        for await _ in wakes {
            do {
                try await catchUpDocument(for: link)
                pause = Self.firstPause
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning(
                    "reading the document's changes failed; trying again", metadata: ["error": "\(error)"])
                guard await pausedAfterFailure(&pause) else { return }
                wakeDocument()
            }
        }
    }

    /// Applies what changed in the fleet's document since the DataPoint's place in it, or the whole document when
    /// removals it has not heard of may have been pruned.
    func catchUpDocument(for link: SharedLink) async throws {
        var more = true
        while more, !Task.isCancelled {
            let cursor = documentCursor.withLock { $0 }
            let read = try await queue.documentChanges(after: cursor, limit: Self.changesPerRead)
            guard read.prunedThrough <= cursor.through else {
                logger.notice(
                    "removals this process had not heard of were pruned; reading the whole document again",
                    metadata: ["version": "\(cursor.through)", "pruned through": "\(read.prunedThrough)"])
                let (rows, version) = try await queue.document()
                link.reload(rows, through: version)
                documentCursor.withLock { $0 = PostgresQueue.DocumentCursor(through: version) }
                return
            }
            // The DataPoint skips its own, which it applied as their commits returned.
            link.follow(read.changes, through: read.cursor.through)
            documentCursor.withLock { $0 = read.cursor }
            more = read.changes.count == Self.changesPerRead
        }
    }

    /// Wakes the loop that follows the document: it changed, or the polling timer fired.
    func wakeDocument() {
        _ = running.withLock { $0?.document.yield() }
    }

    private static let changesPerRead = 1000
}
