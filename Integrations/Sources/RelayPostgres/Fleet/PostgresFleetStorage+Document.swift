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

    /// Records the outcome of an attempt that staged relations, with its changes, if this process still holds its
    /// claim and the relations name models the database holds; see
    /// ``SharedStorage/commitStaged(_:result:changes:ran:)``.
    ///
    /// The database decides under the lock that orders every commit of the document, so a model another process has
    /// just removed is missing here, and one it has just added is found, whatever this process has heard of. The
    /// claim stays held until the DataPoint records the attempt's end, which settles the handles then; its lease is no
    /// longer renewed, since the database no longer runs it.
    public func commitStaged(
        _ id: UUID, result: CallResult, changes: [ModelChange], ran: Duration
    ) async throws -> RelayError? {
        let claim = held.withLock { held -> PostgresHeldClaim? in
            guard let claim = held[id], claim.stagedCommit == .none else { return nil }
            held[id]?.stagedCommit = .underWay
            return claim
        }
        guard let claim else {
            throw RelayError(
                .storageFailure, "this process no longer holds operation \(id); its changes were not committed")
        }
        let outcome = PostgresQueue.Outcome(
            id: id, owner: owner, attempt: claim.attempt, result: result, changes: changes, runTime: ran)
        let committed: (recorded: Set<UUID>, changes: [SharedModelChange])
        do {
            committed = try await queue.finishCommitting([outcome])
        } catch {
            held.withLock { $0[id]?.stagedCommit = .none }
            if let error = error as? RelayError, error.code == .modelNotFound { return error }
            throw error
        }
        guard committed.recorded.contains(id) else {
            held.withLock { $0[id]?.stagedCommit = .none }
            throw RelayError(.storageFailure, "the claim of operation \(id) was lost; its changes were not committed")
        }
        held.withLock { $0[id]?.stagedCommit = .done }
        // In the document before the DataPoint records the end, so that whoever awaits the handle reads them.
        running.withLock { $0?.link }?.apply(committed.changes)
        return nil
    }

    /// Wakes the loop that follows the document: it changed, or the polling timer fired.
    func wakeDocument() {
        _ = running.withLock { $0?.document.yield() }
    }

    private static let changesPerRead = 1000
}
