import Foundation

extension PipelineCore {
    // MARK: - Lifecycle

    func start() throws(RelayError) {
        let now = clock.now
        perform(try transition { (machine, actions) throws(RelayError) in try machine.start(now: now, into: &actions) })
    }

    /// Runs the engine until it stops: sequences' supervisors, the timer loop and the attempt timer's, all children of
    /// one task group, and beside them the store's work (see ``Storage/maintain()`` and ``SharedStorage/run(_:)``),
    /// cancelled once the engine has stopped.
    func run() async {
        await withTaskCancellationHandler {
            await withTaskGroup(of: Void.self) { maintenance in
                maintenance.addTask {
                    if let shared = self.shared {
                        await shared.run(SharedLink(core: self))
                    } else {
                        await self.storage.maintain()
                    }
                }
                await withDiscardingTaskGroup { group in
                    group.addTask {
                        await self.runTimers()
                        // The timer loop ends once no worker is left to arm a deadline.
                        self.attemptTimer.close()
                    }
                    group.addTask { await self.attemptTimer.runLoop(expire: self.expireAttempts) }
                    while let (sequence, lane) = await nextLaneToStart() {
                        group.addTask { await sequence.run(in: self, lane: lane) }
                    }
                }
                maintenance.cancelAll()
            }
        } onCancel: {
            beginStop(gracePeriod: .zero)
        }
        await finishShutdown()
    }

    /// Stops starting operations.
    ///
    /// Running ones may finish within the grace period; then their tasks are cancelled.
    ///
    /// Returns whether the DataPoint stopped at once, because it was not running.
    @discardableResult
    func beginStop(gracePeriod: Duration) -> Bool {
        let now = clock.now
        let (deadline, overflow) = now.addingReportingOverflow(max(gracePeriod, .zero).relayNanoseconds)
        let stopped = transition { machine, actions in
            machine.beginStop(deadline: overflow ? Int64.max : deadline, now: now, into: &actions)
            return machine.lifecycle == .stopped
        }
        perform(stopped)
        return stopped.value
    }

    /// Closes the store, then ends every event stream and resumes every waiter: once `shutdown()` returns, the store
    /// is released.
    func finishShutdown() async {
        let failure = await closeStorage()
        let now = clock.now
        let done = transition { machine, actions in
            machine.closeFailure = failure
            machine.completeShutdown(now: now, into: &actions)
        }
        // A closed store has made everything it was given durable; one that failed never will.
        if failure == nil { events.deliverAll() } else { events.fail() }
        done.actions.perform(observers: configuration.observers)
        remote.close()
    }

    /// Closes the store, and returns what it threw.
    func closeStorage() async -> RelayError? {
        do {
            try await storage.close()
            return nil
        } catch {
            return error as? RelayError ?? RelayError(.storageFailure, "the store failed to close: \(error)")
        }
    }

    /// What the store threw as it closed, once the DataPoint has stopped.
    func checkClosed() throws(RelayError) {
        if let failure = read({ $0.closeFailure }) { throw failure }
    }

    /// Waits until the pipeline has started (or stopped), or until the waiting task is cancelled.
    func waitUntilStarted() async {
        await Waiters<Void>.wait(
            cancelled: (),
            park: { id, continuation in
                apply { machine, _ in machine.waitUntilStarted(id: id, continuation) } ? () : nil
            },
            cancel: { id in apply { machine, _ in machine.startWaiters.cancel(id) } },
            forget: { id in apply { machine, _ in machine.startWaiters.forget(id) } }
        )
    }

    /// Waits until the DataPoint has stopped, or until the waiting task is cancelled.
    func waitUntilStopped() async {
        await Waiters<Void>.wait(
            cancelled: (),
            park: { id, continuation in
                apply { machine, _ in machine.waitUntilStopped(id: id, continuation) } ? () : nil
            },
            cancel: { id in apply { machine, _ in machine.stopWaiters.cancel(id) } },
            forget: { id in apply { machine, _ in machine.stopWaiters.forget(id) } }
        )
    }

    /// Waits until the pipeline is idle (`untilIdle`) or settled, or until the waiting task is cancelled.
    func waitUntilQuiet(untilIdle: Bool) async {
        await Waiters<Void>.wait(
            cancelled: (),
            park: { id, continuation in
                let now = clock.now
                return apply { machine, _ in
                    machine.waitUntilQuiet(untilIdle: untilIdle, now: now, id: id, continuation)
                }
                    ? () : nil
            },
            cancel: { id in
                apply { machine, _ in untilIdle ? machine.idleWaiters.cancel(id) : machine.settledWaiters.cancel(id) }
            },
            forget: { id in
                apply { machine, _ in untilIdle ? machine.idleWaiters.forget(id) : machine.settledWaiters.forget(id) }
            }
        )
    }

    /// Waits until the pipeline is idle or stalled, and returns the stalled operations' ids.
    ///
    /// Stalled: every running operation's executor sleeps on a clock that reports its sleepers. No ids when idle, or
    /// when the waiting task is cancelled.
    func waitUntilIdleOrStalled() async -> [UUID] {
        await Waiters<[UUID]>.wait(
            cancelled: [],
            park: { id, continuation in
                let now = clock.now
                return apply { machine, _ in machine.waitUntilIdleOrStalled(now: now, id: id, continuation) }
            },
            cancel: { id in apply { machine, _ in machine.clockSleeps.waiters.cancel(id) } },
            forget: { id in apply { machine, _ in machine.clockSleeps.waiters.forget(id) } }
        )
    }

    /// Notes that the executor of the operation in `slot` begins, or ends, a sleep on the clock.
    func noteClockSleep(_ slot: Int32, began: Bool) {
        apply { machine, _ in machine.noteClockSleep(slot, began: began) }
    }

    /// The next registered sequence whose supervisor may start, or `nil` once the DataPoint stops.
    ///
    /// Each look under the lock either starts a lane or parks: with a look before the park, a sequence registered
    /// between the two would be marked started by the park's look, and never get its supervisor.
    private func nextLaneToStart() async -> (CallSequence, Int32)? {
        while true {
            var next = PipelineStateMachine.LaneStart.wait
            await Waiters<Void>.wait(
                cancelled: (),
                park: { id, continuation in
                    next = apply { machine, _ in machine.nextLaneToStart(parking: (id, continuation)) }
                    guard case .wait = next else { return () }
                    return nil
                },
                cancel: { id in apply { machine, _ in machine.laneStartWaiters.cancel(id) } },
                forget: { id in apply { machine, _ in machine.laneStartWaiters.forget(id) } }
            )
            switch next {
            case .start(let sequence, let lane): return (sequence, lane)
            case .stop: return nil
            case .wait where Task.isCancelled: return nil
            case .wait: continue
            }
        }
    }

    // MARK: - Timers

    /// Sleeps on the injected clock until the earliest hold, retry, attempt or shutdown deadline, or the next sweep of
    /// finished operations whose retention window has passed, and fires it.
    private func runTimers() async {
        while !Task.isCancelled {
            let plan = apply { machine, _ in machine.timerPlan() }
            guard await clock.follow(plan, waitForRearm: waitForRearm), !Task.isCancelled else { return }
            let now = clock.now
            let fired = transition { $0.fireTimers(now: now, into: &$1) }
            try? await acknowledge(fired)
            // Not on every wake: a stream of finishing operations rearms the loop, and forgetting each as it
            // finishes would compete with the work itself.
            if fired.value { forgetExpired() }
        }
    }

    /// Cancels the workers of attempts whose deadlines passed.
    private func expireAttempts(_ attempts: [AttemptDeadlines.Attempt]) {
        perform(transition { $0.expireAttempts(attempts, into: &$1) })
    }

    @Sendable private func waitForRearm(_ generation: UInt64) async {
        await Waiters<Void>.wait(
            cancelled: (),
            park: { id, continuation in
                apply { machine, _ in machine.waitForRearm(generation: generation, id: id, continuation) } ? () : nil
            },
            cancel: { id in apply { machine, _ in machine.timers.cancelWait(id) } },
            forget: { id in apply { machine, _ in machine.timers.forgetWait(id) } }
        )
    }

    // MARK: - Sequence supervisors

    /// Waits until the lane asks for workers; `false` once the DataPoint stops.
    func waitForSpawnRequest(lane: Int32) async -> Bool {
        await Waiters<Bool>.wait(
            cancelled: false,
            park: { id, continuation in
                apply { machine, _ in machine.waitForSpawnRequest(lane: lane, id: id, continuation) }
            },
            cancel: { id in apply { machine, _ in machine.lanes[Int(lane)].spawnWaiters.cancel(id) } },
            forget: { id in apply { machine, _ in machine.lanes[Int(lane)].spawnWaiters.forget(id) } }
        )
    }

    func takeSpawn(lane: Int32) -> UInt64? {
        apply { machine, _ in machine.takeSpawn(lane: lane) }
    }

    // MARK: - Workers

    /// Runs one worker.
    ///
    /// A worker is a loop that takes ready operations of its lane one at a time, beside a child that cancels the
    /// loop when the operation it runs is cancelled. A cancelled worker finishes its operation and exits; the lane
    /// spawns a replacement if work remains.
    func runWorker(_ worker: UInt64, lane: Int32) async {
        // The worker's state exists from its spawn until it exits, so the batch is there.
        let batch = read { $0.batch(of: worker) } ?? WorkerBatch()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.workerLoop(worker, lane: lane, batch: batch) }
            group.addTask { await self.waitForCancelSignal(worker) }
            await group.next()
            group.cancelAll()
        }
        apply { $0.workerExited(worker, claimWake: false, into: &$1) }
    }

    /// Finishing operations and taking the next share one critical section.
    ///
    /// While the lane's operations finish within microseconds, the worker claims several at once, up to a limit that
    /// doubles after each fast batch; one slow operation sets it back to one, so that operations that wait on I/O
    /// keep a worker each and run side by side.
    private func workerLoop(_ worker: UInt64, lane: Int32, batch: WorkerBatch) async {
        let link = WorkerLink(core: self, worker: worker)
        var claimWake = true
        var limit = 1
        var sinceYield = 0
        var jobs: [PipelineStateMachine.Job] = []
        var ends: [PipelineStateMachine.EndedAttempt] = []
        var actions = PipelineActions()
        jobs.reserveCapacity(Self.batchLimit)
        ends.reserveCapacity(Self.batchLimit)
        while true {
            let now = clock.now
            let cancelled = Task.isCancelled
            jobs.removeAll(keepingCapacity: true)
            let (next, receipt) = transition(into: &actions) { machine, actions in
                machine.workerStep(
                    worker, lane: lane, ended: ends, claimWake: claimWake, cancelled: cancelled, limit: limit,
                    batch: batch, claimed: &jobs, now: now, into: &actions)
            }
            ends.removeAll(keepingCapacity: true)
            claimWake = false
            var recorded = true
            if receipt.ticket != .durable {
                do {
                    try await acknowledge(receipt, &actions)
                } catch {
                    recorded = false
                }
            } else {
                perform(receipt, actions)
            }
            actions.clear()
            switch next {
            case .run(let job) where !recorded:
                // The store failed the write that recorded the claim, and may have failed the operations' commit:
                // nothing claimed runs. They go back, and nothing starts on a failed store.
                ends.append(.init(slot: job.slot, end: .returned))
                for claimed in jobs { ends.append(.init(slot: claimed.slot, end: .returned)) }
            case .run(let job):
                if observing { observeClaims(CollectionOfOne(job) + jobs) }
                // At the full limit with nothing more to claim (a bunch of one, say), there is nothing to decide:
                // the clock, read twice per operation, would cost more than the rest of the loop.
                let timed = limit < Self.batchLimit || !jobs.isEmpty
                let began = timed ? ContinuousClock.now : nil
                ends.append(.init(slot: job.slot, end: await execute(job, link: link)))
                for (index, claimed) in jobs.enumerated() {
                    guard Self.goesOn(after: ends[index].end), batch.mayRun(index + 1) else {
                        ends.append(.init(slot: claimed.slot, end: .returned))
                        continue
                    }
                    ends.append(.init(slot: claimed.slot, end: await execute(claimed, link: link)))
                }
                if let began {
                    let fast = ContinuousClock.now - began < Self.fastOperation * ends.count
                    limit = fast ? min(limit * 2, Self.batchLimit) : 1
                }
                // Operations that finish without suspending would keep this thread to the worker for the whole
                // backlog; the application's other tasks, and a request to stop, get a turn now and then.
                sinceYield += ends.count
                if sinceYield >= Self.operationsBetweenYields {
                    sinceYield = 0
                    await Task.yield()
                }
            case .probe(let executor, let operation, let destination):
                let answered = await executor.probe(operation)
                let now = clock.now
                // Acknowledged: a probe that goes unanswered can fail an operation past its maximum elapsed time.
                let ended = transition {
                    $0.probeEnded(
                        destination: destination, lane: lane, worker: worker, answered: answered, now: now, into: &$1)
                }
                try? await acknowledge(ended)
            case .park:
                claimWake = await park(worker, lane: lane) == .work
            case .exit:
                return
            }
        }
    }

    /// How many operations a worker runs between two turns it gives the executor's other tasks.
    private static let operationsBetweenYields = 256
    /// The most operations a worker claims at once; below 255, since a claimed operation keeps its place in its batch
    /// in a byte of its slot.
    private static let batchLimit = 16
    /// An operation that finishes within this much time, on average over its batch, lets its worker claim more.
    private static let fastOperation = Duration.microseconds(20)

    /// Whether a worker runs its next claimed operation after one that ended this way: not after one that found its
    /// destination offline (the rest may go there too), and never after an operation it gave back.
    ///
    /// The pipeline stops a worker's batch whenever it cancels the worker's task or begins to stop (see
    /// ``PipelineStateMachine/signalCancel(_:)`` and ``PipelineStateMachine/beginStop(deadline:now:)``), and
    /// `WorkerBatch.mayRun` reads that, which is cheaper than asking the task. When the task that runs the DataPoint is
    /// cancelled, its handler begins the stop as the cancellation reaches the workers; an operation a worker starts in
    /// between sees its task cancelled, as a running one does.
    private static func goesOn(after end: PipelineStateMachine.AttemptEnd) -> Bool {
        switch end {
        case .outcome(.offline), .reported(.offline, _), .staged(.offline, _, _), .returned, .interrupted: return false
        case .outcome, .reported, .staged, .error: return true
        }
    }

    private func park(_ worker: UInt64, lane: Int32) async -> WorkerWake {
        await Waiters<WorkerWake>.wait(
            cancelled: .recheck,
            park: { id, continuation in
                apply { $0.park(lane: lane, worker: worker, id: id, continuation, into: &$1) }
            },
            cancel: { id in apply { machine, _ in machine.lanes[Int(lane)].idleWorkers.cancel(id) } },
            forget: { id in apply { machine, _ in machine.lanes[Int(lane)].idleWorkers.forget(id) } }
        )
    }

    private func waitForCancelSignal(_ worker: UInt64) async {
        await Waiters<Void>.wait(
            cancelled: (),
            park: { id, continuation in
                apply { machine, _ in machine.waitForCancelSignal(worker, id: id, continuation) } ? () : nil
            },
            cancel: { id in apply { machine, _ in machine.workers[worker]?.cancelWaiters.cancel(id) } },
            forget: { id in apply { machine, _ in machine.workers[worker]?.cancelWaiters.forget(id) } }
        )
    }
}
