import Foundation
import Logging
import PostgresNIO
import Relay

extension PostgresFleetStorage {
    /// Claims operations for the running DataPoint, keeps their leases, listens for new and finished work, and looks
    /// both up on a timer, until the task is cancelled; see ``SharedStorage/run(_:)``.
    public func run(_ link: SharedLink) async {
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (eventWakes, eventWake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let (documentWakes, documentWake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        running.withLock { $0 = (link, wake, eventWake, documentWake) }
        defer { running.withLock { $0 = nil } }
        wake.yield()
        eventWake.yield()
        documentWake.yield()
        await withDiscardingTaskGroup { group in
            if options.claims { group.addTask { await self.claim(for: link, on: wakes) } }
            group.addTask { await self.followEvents(for: link, on: eventWakes) }
            group.addTask { await self.followDocument(for: link, on: documentWakes) }
            if options.listens { group.addTask { await self.listen(for: link) } }
            // Leases are kept on their own cadence, whatever the polling: an expired one is reclaimed within a third
            // of a lease, even when a claim's answer was lost and no process knows that it holds the operation.
            group.addTask {
                await self.every(self.options.lease / 3) {
                    link.abandon(try await self.renew())
                    if try await !self.queue.reclaimExpired().isEmpty { self.wakeClaims() }
                    try await self.cancelRequested(for: link)
                    try await self.forgetUnrecordedChanges()
                    try await self.probeOffline(for: link, always: true)
                    if self.offlineKnown.withLock({ $0 }) { _ = try await self.queue.failOverdue() }
                    try await self.queue.pruneEvents(olderThan: self.options.eventRetention)
                    try await self.queue.pruneRemovedModels(olderThan: self.options.eventRetention)
                    if let retention = self.retention.withLock({ $0 }) { try await self.queue.prune(retention) }
                }
            }
            group.addTask {
                await self.every(self.options.pollInterval) {
                    self.wakeClaims()
                    self.wakeEvents(for: link, always: true)
                    self.wakeDocument()
                    try await self.probeOffline(for: link, always: false)
                    try await self.settleAwaited(self.polled(for: link), for: link)
                }
            }
        }
    }

    /// Wakes the loop that claims: work may be ready, or room has freed here.
    func wakeClaims() {
        _ = running.withLock { $0?.wake.yield() }
    }

    /// Claims as much as the DataPoint has room for, each time it is woken; a claim that fails is made again after a
    /// pause (see ``pausedAfterFailure(_:)``).
    private func claim(for link: SharedLink, on wakes: AsyncStream<Void>) async {
        var pause = Self.firstPause
        for await _ in wakes {
            var more = true
            while more, !Task.isCancelled {
                let sequences = link.sequences
                do {
                    switch reserveClaim(by: .loop, of: sequences, for: link) {
                    case .claim(let room):
                        more = try await claim(claimRequest(room: room, of: sequences), for: link)
                    case .awaitOutcomes(let position):
                        // Their write claims first (see PostgresClaimRoom): the loop waits for it, and makes it if
                        // nobody else waits.
                        try await waitUntilDurable(StorageTicket(position: position))
                    case .none:
                        more = false
                    }
                    pause = Self.firstPause
                } catch {
                    guard !Task.isCancelled else { return }
                    logger.warning("claiming operations failed; trying again", metadata: ["error": "\(error)"])
                    guard await pausedAfterFailure(&pause) else { return }
                }
            }
        }
    }

    /// The first pause before a call that failed is made again.
    static let firstPause = Duration.milliseconds(10)

    /// Waits before a claim or a read that failed is made again, rather than leave it to the next wake, which may be
    /// a poll far off or never come: `pause`, which then doubles up to the polling interval; `false` once the task is
    /// cancelled.
    func pausedAfterFailure(_ pause: inout Duration) async -> Bool {
        do { try await clock.sleep(for: pause) } catch { return false }
        pause = min(pause * 2, options.pollInterval)
        return true
    }

    /// Claims what `request` reserved and hands it to the DataPoint; whether it filled all the room it asked for.
    private func claim(_ request: PostgresQueue.ClaimRequest, for link: SharedLink) async throws -> Bool {
        defer { releaseClaim(request) }
        let claims = try await queue.claim(request)
        await take(claims, for: link)
        return claims.count >= request.limit
    }

    /// What a claim by `claimer` of operations of `sequences` does: claim the room the DataPoint takes beside what
    /// waits for a worker here, wait for outcomes still to be written, or nothing (see ``PostgresClaimRoom``).
    private func reserveClaim(
        by claimer: PostgresClaimRoom.Claimer, of sequences: [CallSequence.Name], for link: SharedLink
    ) -> PostgresClaimRoom.Reservation {
        guard options.claims, !sequences.isEmpty else { return .none }
        let waiting = link.waiting
        return claimRoom.withLock { $0.reserve(for: claimer, waiting: waiting) }
    }

    /// A claim of at most `room` operations of `sequences`, under this process's lease.
    private func claimRequest(room: Int, of sequences: [CallSequence.Name]) -> PostgresQueue.ClaimRequest {
        PostgresQueue.ClaimRequest(owner: owner, sequences: sequences, limit: room, lease: options.lease)
    }

    /// Gives back the room of a claim whose operations the DataPoint holds now, or that failed; wakes the loop if it
    /// found no room meanwhile.
    private func releaseClaim(_ request: PostgresQueue.ClaimRequest) {
        if claimRoom.withLock({ $0.release(request.limit) }) { wakeClaims() }
    }

    /// Holds claims, and hands them to the DataPoint to run.
    private func take(_ claims: [PostgresQueue.Claim], for link: SharedLink) async {
        held.withLock { held in
            for claim in claims {
                held[claim.operation.id] = PostgresHeldClaim(
                    attempt: claim.attempt, offlineLimit: claim.operation.retryPolicy.maximumElapsed)
            }
        }
        let runs = claims.filter { !$0.cancelRequested }
        let ranHere = link.run(
            runs.map { claim in
                StoredOperation(
                    operation: claim.operation, snapshot: claim.snapshot, attempts: claim.attempt - 1,
                    enqueuedAt: claim.enqueuedAt, firstStartedAt: claim.firstStartedAt)
            })
        // Recorded under the new claims rather than run: outcomes given up while the database was out of reach, their
        // operations claimed here again, and operations cancelled while an earlier claim ran them.
        let cancelled = claims.filter(\.cancelRequested).map { ($0.operation.id, CallResult.cancelled(.requested)) }
        let recorded = ranHere.map { ($0.key, $0.value) } + cancelled
        guard !recorded.isEmpty else { return }
        let unrecorded = unrecordedChanges.withLock { changes in
            recorded.map { changes.removeValue(forKey: $0.0) ?? [] }
        }
        await applyPersistently(
            zip(recorded, unrecorded).map { PostgresFleetWrite.finished($0.0, $0.1, changes: $1, ran: .zero) })
    }

    /// Probes the offline destinations whose probes are due, unless `always` is false and none is known offline.
    ///
    /// Each is probed by one of its operations claimed here, unless no operation waits for it any more; a destination
    /// this process cannot probe (its sequences are full, or not registered here) is left for another.
    private func probeOffline(for link: SharedLink, always: Bool) async throws {
        let sequences = link.sequences
        guard !sequences.isEmpty, always || offlineKnown.withLock({ $0 }) else { return }
        let (due, any) = try await queue.offlineDestinations(limit: 8)
        offlineKnown.withLock { $0 = any }
        for destination in due {
            let claims = try await queue.claim(
                PostgresQueue.ClaimRequest(
                    owner: owner, sequences: sequences, limit: 1, lease: options.lease, probing: destination))
            if claims.isEmpty {
                try await queue.forgetIdle(destination)
            } else {
                await take(claims, for: link)
            }
        }
    }

    /// Cancels what this process runs and another asked to cancel: a backstop for a notification missed.
    func cancelRequested(for link: SharedLink) async throws {
        guard held.withLock({ !$0.isEmpty }) else { return }
        await link.cancel(try await queue.cancellationsRequested(owner: owner))
    }

    /// Lets go of the changes of outcomes given up whose operations ended elsewhere, or left the store: their changes
    /// are the attempt's that ended them.
    private func forgetUnrecordedChanges() async throws {
        let ids = unrecordedChanges.withLock { Array($0.keys) }
        guard !ids.isEmpty else { return }
        let (outcomes, absent) = try await queue.outcomes(of: ids)
        unrecordedChanges.withLock { unrecorded in
            for id in Array(outcomes.keys) + absent { unrecorded[id] = nil }
        }
    }

    /// What the poll looks up: every operation awaited here, or while the store listens only what no announcement
    /// covers (see ``PostgresBackstop``).
    func polled(for link: SharedLink) -> [UUID] {
        switch backstop.withLock({ $0.sweep() }) {
        case .everything:
            return link.awaited
        case .only(let ids):
            let awaited = link.awaited(among: Array(ids))
            backstop.withLock { $0.ended(ids.subtracting(awaited)) }
            return awaited
        }
    }

    /// Settles the handles of those of `ids` that ended, and fails those of operations whose commit joined a
    /// transaction of the application's that rolled back.
    func settleAwaited(_ ids: [UUID], for link: SharedLink) async throws {
        guard !ids.isEmpty else { return }
        let (outcomes, absent) = try await queue.outcomes(of: ids)
        link.settle(outcomes)
        let lost = try await queue.neverCommitted(link.committed(among: absent))
        backstop.withLock { backstop in
            backstop.settled(Set(ids).subtracting(absent).union(lost))
            backstop.ended(Set(outcomes.keys).union(lost))
        }
        guard !lost.isEmpty else { return }
        link.fail(
            lost,
            with: RelayError(
                .unknownOperation,
                "the transaction that enqueued \(lost.count == 1 ? "this operation" : "these operations") rolled back; "
                    + "\(lost.count == 1 ? "it" : "they") will never run",
                operationIDs: lost))
    }

    /// Renews this process's leases, and lets go of those it lost.
    ///
    /// - Returns: The operations whose leases were lost, which the fleet runs elsewhere.
    private func renew() async throws -> [UUID] {
        // An outcome committed already holds no lease: the database runs it no more.
        let ids = held.withLock { held in held.filter { $0.value.stagedCommit != .done }.map(\.key) }
        guard !ids.isEmpty else { return [] }
        let kept = try await queue.renew(ids, owner: owner, lease: options.lease)
        return held.withLock { held in
            // Only those still held: an outcome recorded meanwhile let go of its claim, and lost nothing; one being
            // recorded may have ended the lease itself.
            let lost = ids.filter { !kept.contains($0) && held[$0].map { $0.stagedCommit != .underWay } == true }
            for id in lost { held[id] = nil }
            return lost
        }
    }

    /// Runs `body` every `interval` until the task is cancelled, logging what fails.
    private func every(_ interval: Duration, _ body: () async throws -> Void) async {
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: interval)
            } catch {
                return
            }
            do {
                try await body()
            } catch {
                guard !Task.isCancelled else { return }
                logger.warning("the fleet's upkeep failed; trying again", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Applies a batch of changes, trying again while the database fails until the deadline; then gives up the
    /// batch, and lets go of the claims it ended or handed back, so that their leases expire.
    ///
    /// One deadline bounds the tries together, each bounded by it too. Trying again is safe: every change is
    /// idempotent, and a fenced outcome recorded once is refused the next time.
    func applyPersistently(_ writes: [PostgresFleetWrite]) async {
        let (clock, logger) = (self.clock, self.logger)
        do {
            try await PostgresDeadline.run("recording what ran here", within: options.deadline, on: clock) {
                var delay = Duration.milliseconds(50)
                while true {
                    do {
                        return try await self.apply(writes)
                    } catch {
                        try Task.checkCancellation()
                        logger.warning("recording what ran here failed; trying again", metadata: ["error": "\(error)"])
                        try await clock.sleep(for: delay)
                        delay = min(delay * 2, .seconds(2))
                    }
                }
            }
        } catch {
            logger.error(
                "gave up recording what ran here; leases make up for it",
                metadata: ["error": "\(error)", "changes": "\(writes.count)"])
            // Let go of, so that their leases expire and the fleet runs them again: renewed, an operation that this
            // process handed back (a retry, say) would stay claimed as long as the process lives, and never run.
            let released = writes.compactMap(\.releasedClaim)
            held.withLock { held in
                for id in released { held[id] = nil }
            }
            backstop.withLock { $0.released(released) }
            // Kept for the operation's next claim here, which records its outcome rather than run it again.
            unrecordedChanges.withLock { unrecorded in
                for case .finished(let id, _, let changes, _) in writes where !changes.isEmpty {
                    unrecorded[id] = changes
                }
            }
        }
    }

    /// Applies a batch of changes from the records of what this process runs.
    func apply(_ writes: [PostgresFleetWrite]) async throws {
        var outcomes: [PostgresQueue.Outcome] = []
        var interrupted: [UUID] = []
        var retries: [(id: UUID, attempt: Int, at: Date)] = []
        var offline: [(id: UUID, claim: PostgresHeldClaim)] = []
        var committed: [UUID: CallResult] = [:]
        for write in writes {
            switch write {
            case .started(let id, let attempt):
                let claim = held.withLock { held -> PostgresHeldClaim? in
                    held[id]?.began = true
                    return held[id]
                }
                guard let claim, attempt > claim.attempt else { continue }
                let kept = try await queue.advance(id, owner: owner, to: attempt)
                held.withLock { held in
                    held[id] =
                        kept ? PostgresHeldClaim(attempt: attempt, began: true, offlineLimit: claim.offlineLimit) : nil
                }
            case .finished(let id, let result, let changes, let ran):
                guard let claim = held.withLock({ $0[id] }) else { continue }
                if claim.stagedCommit == .done {
                    committed[id] = result
                    continue
                }
                outcomes.append(
                    PostgresQueue.Outcome(
                        id: id, owner: owner, attempt: claim.attempt, result: result, changes: changes, runTime: ran))
            case .interrupted(let id):
                interrupted.append(id)
            case .retry(let id, let date):
                guard let claim = held.withLock({ $0[id] }) else { continue }
                retries.append((id, claim.attempt, date))
            case .offline(let id):
                guard let claim = held.withLock({ $0[id] }) else { continue }
                offline.append((id, claim))
            }
        }
        if !committed.isEmpty {
            // Recorded with their changes before their ends were (see `commitStaged`): only the handles are left.
            running.withLock { $0?.link }?.settle(committed)
            held.withLock { held in
                for id in committed.keys { held[id] = nil }
            }
        }
        if !outcomes.isEmpty {
            let link = running.withLock { $0?.link }
            // The slots these outcomes free are claimed again in their transaction.
            let plain = outcomes.filter(\.changes.isEmpty)
            var request: PostgresQueue.ClaimRequest?
            if !plain.isEmpty, let link {
                let sequences = link.sequences
                if case .claim(let room) = reserveClaim(by: .outcomes, of: sequences, for: link) {
                    request = claimRequest(room: room, of: sequences)
                }
            }
            defer { request.map(releaseClaim) }
            let (finished, claims) = try await queue.finish(plain, thenClaiming: request)
            // Held at once: what follows may fail, and a claim committed but never held would wait for its lease.
            if let link { await take(claims, for: link) }
            var recorded = finished
            let committing = outcomes.filter { !$0.changes.isEmpty }
            if !committing.isEmpty {
                let committed = try await queue.finishCommitting(committing)
                recorded.formUnion(committed.recorded)
                // In the document before the handles settle, so that whoever awaited one reads what it committed.
                link?.apply(committed.changes)
            }
            // Settled before the claims are let go: the listener leaves the outcomes of claims held here to this. The
            // poll looks up those not recorded here, whose ends it may have left: another claim's, or this one's own
            // from a try whose answer was lost.
            backstop.withLock { $0.released(outcomes.map(\.id).filter { !recorded.contains($0) }) }
            let settled = outcomes.filter { recorded.contains($0.id) }
            link?.settle(
                Dictionary(settled.map { ($0.id, $0.result) }, uniquingKeysWith: { first, _ in first }))
            held.withLock { held in
                for outcome in outcomes { held[outcome.id] = nil }
            }
            // The loop claims what this claim left: more may be ready. A claim that took less than it asked for saw
            // every slot these outcomes freed, under their sequences' locks.
            if request.map({ claims.count >= $0.limit }) ?? true { wakeClaims() }
        }
        if !interrupted.isEmpty {
            _ = try await queue.giveBack(interrupted, owner: owner, counted: true)
            held.withLock { held in
                for id in interrupted { held[id] = nil }
            }
        }
        for retry in retries {
            _ = try await queue.giveBack(retry.id, owner: owner, attempt: retry.attempt, until: retry.at)
            held.withLock { $0[retry.id] = nil }
            wakeClaims()
        }
        for (id, claim) in offline {
            _ = try await queue.goOffline(id, owner: owner, attempt: claim.attempt, limit: claim.offlineLimit)
            offlineKnown.withLock { $0 = true }
            held.withLock { $0[id] = nil }
            wakeClaims()
        }
    }
}
