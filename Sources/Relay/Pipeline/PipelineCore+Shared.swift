import Foundation

/// A DataPoint on a shared store: its commits go to the store, which numbers them fleet-wide, and its graph holds the
/// operations the store claimed for it (see ``SharedStorage``).
extension PipelineCore {
    /// Commits operations through the shared store, and returns their records, which settle once the store reports
    /// their outcomes.
    func enqueueShared(
        _ store: any SharedStorage, _ operations: [CallOperation], changes: [ModelChange] = [],
        erasures: [Alias] = [], startTimes: [UUID: Int64]
    ) async throws(RelayError) -> [OperationRecord] {
        switch read({ $0.lifecycle }) {
        case .stopping, .stopped: throw RelayError(.shutdown, "the DataPoint has shut down; nothing can be enqueued")
        case .idle, .running: break
        }
        guard !operations.isEmpty || !changes.isEmpty || !erasures.isEmpty else { return [] }
        if let invalid = CommitPreparation(operations, limits: limits).invalid.first { throw invalid.error }
        let ids = operations.map(\.id)
        remote.expect(ids)
        perform(transition { machine, _ in machine.beginSharedCommit(ids) })
        let commit: SharedCommit
        do throws(RelayError) {
            commit = try await callShared("take the commit") {
                let startTimes = startTimes.mapValues(clock.date)
                guard !changes.isEmpty || !erasures.isEmpty else {
                    return try await store.commit(operations, startTimes: startTimes)
                }
                return try await store.commit(
                    operations, changes: changes, erasures: erasures, startTimes: startTimes)
            }
        } catch {
            endSharedCommit(operations, nil)
            remote.forget(ids)
            throw error
        }
        endSharedCommit(operations, commit)
        let records = OperationRecord.records(for: operations, snapshot: commit.snapshot)
        remote.attach(records)
        remote.settle(commit.outcomes)
        return records
    }

    /// Ends a commit to the shared store, announcing what it enqueued.
    ///
    /// Its document changes, durable and visible with it, apply in the same transition.
    private func endSharedCommit(_ operations: [CallOperation], _ commit: SharedCommit?) {
        let now = clock.now
        perform(
            transition { machine, actions in
                machine.endSharedCommit(
                    operations, snapshot: commit?.snapshot, announced: Set(commit?.announced ?? []), now: now,
                    into: &actions)
                if let commit, commit.isVisible, !commit.changes.isEmpty {
                    machine.applySharedCommit(
                        commit.changes.map { SharedModelChange($0, version: commit.snapshot) }, now: now,
                        into: &actions)
                }
            })
    }

    /// The record of an operation this DataPoint does not hold, looked up in the shared store: settled already when
    /// the operation has ended, otherwise when the store reports its outcome.
    func lookUpShared(_ store: any SharedStorage, _ id: UUID) async throws(RelayError) -> OperationRecord {
        // Expected before the look, so that an outcome announced meanwhile waits for the record.
        remote.expect([id])
        let stored: StoredOperation?
        do throws(RelayError) {
            stored = try await callShared("look up \(id)") { try await store.operation(id) }
        } catch {
            remote.forget([id])
            throw error
        }
        guard let stored else {
            remote.forget([id])
            throw RelayError(.unknownOperation, "no operation \(id) is known to the shared store", operationIDs: [id])
        }
        let record = OperationRecord.records(for: [stored.operation], snapshot: stored.operation.snapshot)[0]
        if let result = stored.result {
            remote.forget([id])
            record.settle(.success(result))
        } else {
            remote.attach([record])
        }
        return record
    }

    /// Operation `id` as a shared store holds it, wherever it was enqueued and ran; `nil` without a shared store.
    func storedShared(_ id: UUID) async throws(RelayError) -> StoredOperation? {
        guard let shared else { return nil }
        return try await callShared("look up \(id)") { try await shared.operation(id) }
    }

    /// The status of an operation: as this DataPoint holds it, or else as a shared store holds it.
    func status(of id: UUID) async throws(RelayError) -> CallStatus? {
        let now = clock.now
        if let status = readWithDirectory({ $0.status(of: id, in: $1, now: now) }) { return status }
        guard let shared else { return nil }
        return try await callShared("read \(id)") { try await shared.status(of: id) }
    }

    /// Registers or reconfigures a sequence on a shared store, before this process does.
    ///
    /// Does nothing on a store of one process. See ``SharedStorage/configure(_:bunchSize:algorithm:replacing:)``.
    func configureShared(
        _ name: CallSequence.Name, bunchSize: Int, algorithm: CallSequence.Algorithm, replacing: Bool
    ) async throws(RelayError) {
        guard let shared else { return }
        try await callShared("register sequence \(name)") {
            try await shared.configure(name, bunchSize: bunchSize, algorithm: algorithm, replacing: replacing)
        }
    }

    /// Calls the shared store, and gives back what it throws as a ``RelayError``: its own, or a storage failure that
    /// says what the store did not do.
    func callShared<Value>(
        _ what: @autoclosure () -> String, _ body: () async throws -> Value
    ) async throws(RelayError) -> Value {
        do {
            return try await body()
        } catch {
            throw error as? RelayError
                ?? RelayError(.storageFailure, "the shared store did not \(what()): \(String(reflecting: error))")
        }
    }

    /// Adds operations the shared store claimed for this process to the graph, to run.
    ///
    /// - Returns: The results of those that finished here already; see ``SharedLink/run(_:)``.
    func adopt(_ claimed: [StoredOperation]) -> [UUID: CallResult] {
        guard !claimed.isEmpty else { return [:] }
        let clock = self.clock
        let adopted = transitionWithDirectory { machine, directory, actions in
            machine.announceClaimed(claimed, now: clock.now, into: &actions)
            return machine.adopt(claimed, clock: clock, directory: &directory, now: clock.now, into: &actions)
        }
        perform(adopted)
        return adopted.value
    }

    /// Stops running here the operations whose claims the shared store lost; see ``SharedLink/abandon(_:)``.
    func abandon(_ ids: [UUID]) {
        guard !ids.isEmpty else { return }
        let now = clock.now
        perform(
            transitionWithDirectory { machine, directory, actions in
                machine.abandon(ids, in: directory, now: now, into: &actions)
            })
    }

    /// Publishes other processes' events to the streams here, behind every event published here before.
    func publishShared(_ events: [SharedEvent]) {
        perform(transition { machine, actions in machine.publish(events, into: &actions) })
    }

    /// Applies the document changes of a commit of this process's that the shared store made; see
    /// ``SharedLink/apply(_:)``.
    func applyShared(_ changes: [SharedModelChange]) {
        guard !changes.isEmpty else { return }
        let now = clock.now
        perform(transition { machine, actions in machine.applySharedCommit(changes, now: now, into: &actions) })
    }

    /// Applies the document changes the shared store's follower read; see ``SharedLink/follow(_:through:)``.
    func followShared(_ changes: [SharedModelChange], through version: UInt64) {
        let now = clock.now
        perform(
            transition { machine, actions in
                machine.followSharedModels(changes, through: version, now: now, into: &actions)
            })
    }

    /// Takes the shared store's whole document again; see ``SharedLink/reload(_:through:)``.
    func reloadShared(_ rows: [SharedModelChange], through version: UInt64) {
        let now = clock.now
        perform(
            transition { machine, actions in
                machine.reloadSharedModels(rows, through: version, now: now, into: &actions)
            })
    }

    /// Moves a suspension count of the shared store, which every process's claims obey, and announces the change
    /// here.
    ///
    /// This process's own counts stay at zero: an operation it claimed before the suspension may still start (at most
    /// what the store claims ahead), and none waits here on a count that another process resumes.
    func changeSharedSuspensions(
        _ store: any SharedStorage, of name: CallSequence.Name?, by change: Int, reason: String
    ) async throws(RelayError) -> Int {
        let lane = try read { (machine) throws(RelayError) -> Int32? in
            guard let name else { return nil }
            return try machine.registeredLane(name)
        }
        let counts = try await callShared("change suspensions") {
            try await store.changeSuspensions(of: name, by: change, reason: reason)
        }
        let now = clock.now
        perform(
            transition { machine, actions in
                machine.announceSuspension(
                    lane: lane, previous: counts.previous, count: counts.count, reason: reason, now: now,
                    into: &actions)
            })
        return counts.count
    }
}
