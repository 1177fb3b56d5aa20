import Foundation
import Relay

extension PostgresFleetStorage {
    /// Follows the fleet's document each time it is woken, and applies what other processes changed to the
    /// DataPoint's, until the task is cancelled: every process holds all of it.
    func followDocument(for link: SharedLink, on wakes: AsyncStream<Void>) async {
        for await _ in wakes {
            do {
                var more = true
                while more, !Task.isCancelled {
                    let after = documentVersion.withLock { $0 }
                    let changes = try await queue.documentChanges(after: after, limit: Self.changesPerRead)
                    // The DataPoint skips its own, which it applied as their commits returned.
                    link.apply(changes)
                    if let last = changes.last?.version { documentVersion.withLock { $0 = max($0, last) } }
                    more = changes.count == Self.changesPerRead
                }
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning(
                    "reading the document's changes failed; polling retries", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Wakes the loop that follows the document: it changed, or the polling timer fired.
    func wakeDocument() {
        _ = running.withLock { $0?.document.yield() }
    }

    private static let changesPerRead = 1000
}
