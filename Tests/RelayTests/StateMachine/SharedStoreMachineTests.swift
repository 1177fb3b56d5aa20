import Foundation
import Testing

@testable import Relay

/// The state machine of a DataPoint on a shared store, as the actions its events return.
@Suite("Pipeline state machine: a shared store")
struct SharedStoreMachineTests {
    @Test("S28: on a shared store, a retry hands its operation to the store and frees the lane; a claim runs it again")
    func retryHandedToStore() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        let first = CallOperation(kind: "noop")
        let second = CallOperation(kind: "noop")
        let records = try test.enqueue([first, second], now: 0)
        let (worker, job) = try test.spawnAndStart()
        #expect(job.record.id == first.id)
        _ = test.takeActions()

        let retry = PipelineStateMachine.EndedAttempt(
            slot: job.slot, end: .outcome(.retry(after: .seconds(100), reason: "busy")))
        #expect(test.startNext(worker, ended: [retry], now: 0) == second.id, "the lane's one slot is free at once")
        let actions = test.takeActions()
        #expect(actions.effects.handedToStore.map(\.id) == [first.id], "its handles wait for the store's report")
        #expect(actions.effects.settlements.isEmpty, "it has no outcome")
        #expect(actions.records.contains { $0.kind == .retryScheduled && $0.operationID == first.id })
        #expect(test.lookup(first.id) == nil, "nothing here finds it: the store answers for it")
        #expect(test.counts.pending == 0 && test.counts.running == 1)
        #expect(records[0].settled == nil)

        // Claimed here again once its time comes, before its slot was vacated: it runs, from its stored attempts.
        let finished = test.adopt(
            [StoredOperation(operation: first, snapshot: 1, attempts: 1, enqueuedAt: Date(timeIntervalSince1970: 0))],
            now: 100_000_000_000)
        #expect(finished.isEmpty, "not taken for an operation this process finished")
        #expect(test.state(of: first.id, now: 100_000_000_000) == .pending(.ready))
        let running = try #require(test.lookup(second.id))
        let done = PipelineStateMachine.EndedAttempt(slot: running, end: .outcome(.completed(Data())))
        #expect(test.startNext(worker, ended: [done], now: 100_000_000_000) == first.id)
        #expect(test.status(of: first.id, now: 100_000_000_000)?.state == .running(attempt: 2))
    }

    @Test("S20/S29: a document change applies over an earlier version of its model only, and is published once")
    func sharedModelsByVersion() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        _ = try test.subscribe(MachineUnderTest.Subscriber(), to: nil)
        _ = test.takeActions()
        func change(_ text: String?, version: UInt64) -> SharedModelChange {
            SharedModelChange(
                ModelChange(collection: "memos", id: "1", encoded: text.map { Data($0.utf8) }), version: version)
        }
        func published() -> [UInt64] {
            test.takeActions().delivered.compactMap { $0.kind.change?.snapshot }
        }

        test.applyShared([change("ten", version: 10)])
        #expect(test.machine.document.models(in: "memos")["1"] == Data("ten".utf8))
        #expect(published() == [10])
        // Another process's older commit, read after this one's: passed over, and not published.
        test.applyShared([change("nine", version: 9)])
        #expect(test.machine.document.models(in: "memos")["1"] == Data("ten".utf8))
        #expect(published().isEmpty)
        // The same commit read back from the store: passed over too.
        test.applyShared([change("ten", version: 10)])
        #expect(published().isEmpty)
        // A later removal applies, and a later upsert after it.
        test.applyShared([change(nil, version: 11), change("twelve", version: 12)])
        #expect(test.machine.document.models(in: "memos")["1"] == Data("twelve".utf8))
        #expect(published() == [11, 12])
        test.applyShared([change(nil, version: 11)])
        #expect(test.machine.document.models(in: "memos")["1"] == Data("twelve".utf8))
        // One commit that changes a model twice: both apply, in order, and the commit read back is passed over.
        test.applyShared([change("first", version: 13), change("second", version: 13)])
        #expect(test.machine.document.models(in: "memos")["1"] == Data("second".utf8))
        #expect(published() == [13, 13])
        test.applyShared([change("first", version: 13)])
        #expect(test.machine.document.models(in: "memos")["1"] == Data("second".utf8))
    }

    /// A change of the memo `id` of a shared store's commit `version`; a removal when `text` is `nil`.
    static func memo(_ id: String, _ text: String?, _ version: UInt64) -> SharedModelChange {
        SharedModelChange(
            ModelChange(collection: "memos", id: id, encoded: text.map { Data($0.utf8) }), version: version)
    }

    @Test("S20/S29: a removed model's version is kept while a late change could undo it, and forgotten after")
    func removedVersionsForgotten() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        test.followShared([Self.memo("k", "one", 2), Self.memo("k", nil, 5)], through: 5)
        #expect(test.machine.modelVersions.count == 0, "removed through what the follower applied")
        test.applySharedCommit([Self.memo("k", "late", 3)])
        #expect(test.machine.document.models(in: "memos")["k"] == nil, "a commit the follower read already")

        test.applySharedCommit([Self.memo("j", "seven", 7)])
        test.applySharedCommit([Self.memo("j", nil, 8)])
        test.applySharedCommit([Self.memo("j", "six", 6)])
        #expect(test.machine.document.models(in: "memos")["j"] == nil, "refused by the removal's version")
        #expect(test.machine.modelVersions.count == 1)
        test.followShared([], through: 8)
        #expect(test.machine.modelVersions.count == 0)
    }

    @Test("S29/S31: the whole document read again drops what the store no longer has, but for later commits here")
    func reloadDropsPrunedRemovals() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        test.applyShared([Self.memo("kept", "one", 1), Self.memo("gone", "two", 2), Self.memo("later", "seven", 7)])
        test.machine.reloadSharedModels([Self.memo("kept", "six", 6)], through: 6, now: 0, into: &test.actions)
        let models = test.machine.document.models(in: "memos")
        #expect(models["kept"] == Data("six".utf8))
        #expect(models["gone"] == nil, "removed while this process heard nothing, its removal pruned")
        #expect(models["later"] == Data("seven".utf8), "written by a commit after the reading")
    }

    @Test("S13/S29: a stream of an operation another process runs hears the store's events of it, and ends with it")
    func streamOfAnOperationElsewhere() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        let id = UUID()
        let unknown = #expect(throws: RelayError.self) { try test.subscribe(MachineUnderTest.Subscriber(), to: id) }
        #expect(unknown?.code == .unknownOperation, "no handle here awaits it")
        _ = try test.subscribe(MachineUnderTest.Subscriber(), to: id, elsewhere: .ended)
        #expect(test.takeActions().events.contains { if case .close = $0 { true } else { false } }, "ended at once")
        #expect(!test.machine.followsSharedEvents)

        _ = try test.subscribe(MachineUnderTest.Subscriber(), to: id, elsewhere: .awaited)
        _ = test.takeActions()
        #expect(test.machine.followsSharedEvents && !test.machine.followsEveryEvent)
        #expect(test.machine.followedElsewhere(in: test.directory) == [id])
        let metrics = CallMetrics(enqueuedAt: Date(timeIntervalSince1970: 0), attempts: 1)
        let other = SharedEvent(
            operationID: UUID(), sequenceName: .data, kind: .started(attempt: 1), date: Date(timeIntervalSince1970: 1))
        test.publish([
            other, SharedEvent(operationID: id, sequenceName: .data, kind: .started(attempt: 1), date: other.date),
            SharedEvent(operationID: id, sequenceName: .data, kind: .completed(metrics), date: other.date),
        ])
        let actions = test.takeActions()
        #expect(actions.delivered.map(\.kind.name) == ["started", "completed"], "only its own events")
        #expect(actions.events.contains { if case .close = $0 { true } else { false } })
        #expect(!test.machine.followsSharedEvents, "nothing left to follow")
    }

    @Test("S29: another process's suspensions reach streams of every event, and no stream of one operation")
    func suspensionsElsewhere() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        let id = UUID()
        _ = try test.subscribe(MachineUnderTest.Subscriber(), to: id, elsewhere: .awaited)
        _ = test.takeActions()
        let date = Date(timeIntervalSince1970: 1)
        let events = [
            SharedEvent(sequenceName: nil, kind: .suspended(reason: "deploy"), date: date),
            SharedEvent(sequenceName: .data, kind: .resumed(reason: "done"), date: date),
        ]
        test.publish(events)
        #expect(test.takeActions().delivered.isEmpty, "a stream of one operation hears only of it")

        _ = try test.subscribe(MachineUnderTest.Subscriber(), to: nil)
        _ = test.takeActions()
        test.publish(events)
        let delivered = test.takeActions().delivered
        #expect(delivered.map(\.kind.name) == ["suspended", "resumed"])
        #expect(delivered.map(\.sequenceName) == [nil, .data])
        #expect(delivered.allSatisfy { $0.operationID == nil && $0.date == date })
    }

    @Test("S9/S28: on a shared store, an attempt whose destination is offline gives its operation back to the store")
    func offlineHandedToStore() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        let offline = CallOperation(kind: "noop")
        let next = CallOperation(kind: "noop")
        _ = try test.enqueue([offline, next], now: 0)
        let (worker, job) = try test.spawnAndStart()
        _ = test.takeActions()
        let ended = PipelineStateMachine.EndedAttempt(slot: job.slot, end: .outcome(.offline(reason: "refused")))
        #expect(test.startNext(worker, ended: [ended], now: 0) == next.id, "the lane's slot is free at once")
        let actions = test.takeActions()
        #expect(actions.effects.handedToStore.map(\.id) == [offline.id])
        let returned = try #require(actions.records.first { $0.kind == .attemptReturned })
        #expect(returned.operationID == offline.id && returned.returnedUnanswered == true)
        #expect(test.lookup(offline.id) == nil, "the store keeps it, and the destination, for the fleet")
    }

    @Test("S21/S23: on a shared store, what a completing attempt staged rides on its end's record; the store decides")
    func stagedChangesRideOnTheEnd() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        let staging = CallOperation(kind: "noop")
        let relating = CallOperation(kind: "noop")
        _ = try test.enqueue([staging, relating], now: 0)
        let (worker, job) = try test.spawnAndStart()
        _ = test.takeActions()
        let memo = ModelChange(collection: "memos", id: "1", encoded: Data("staged".utf8))

        let completed = PipelineStateMachine.EndedAttempt(
            slot: job.slot, end: .staged(.completed(Data()), nil, [memo]))
        #expect(test.startNext(worker, ended: [completed], now: 0) == relating.id)
        let actions = test.takeActions()
        let finished = try #require(actions.records.first { $0.kind == .finished })
        #expect(finished.operationID == staging.id && finished.modelChanges == [memo])
        #expect(!actions.records.contains { $0.kind == .models }, "no commit of the document's own")
        #expect(test.machine.document.models(in: "memos").isEmpty, "the document takes it from the store")
        #expect(try StorageRecord(encoded: finished.encoded()) == finished, "its compact form keeps the changes")
        var replay = StoredState.Replay(retention: RetentionPolicy())
        replay.apply(.commit(snapshot: 1, operations: [staging], at: Date(timeIntervalSince1970: 0)))
        replay.apply(finished)
        #expect(replay.state().models["memos"]?["1"] == Data("staged".utf8), "a store that replays records keeps them")

        // A relation is the store's to decide before the end is recorded (`SharedStorage.commitStaged`): the machine
        // takes its word, not its own document's, which holds neither model here and may lag the store's.
        let relation = Relation(
            Alias(collection: "memos", id: "1"), .owns, Alias(collection: "memos", id: "2")
        ).change(removing: false)
        let decided = PipelineStateMachine.EndedAttempt(
            slot: try #require(test.lookup(relating.id)), end: .staged(.completed(Data()), nil, [memo, relation]))
        _ = test.startNext(worker, ended: [decided], now: 0)
        let related = try #require(test.takeActions().records.first { $0.kind == .finished })
        #expect(related.operationID == relating.id && related.modelChanges == [memo, relation])
        guard case .completed = related.result else {
            Issue.record("the operation ended \(String(describing: related.result))")
            return
        }
    }

    @Test("S27: a lost claim: a waiting operation leaves at once; a running one is cancelled, leaves, records nothing")
    func lostClaimsLeave() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        let running = CallOperation(kind: "noop")
        let waiting = CallOperation(kind: "noop")
        let records = try test.enqueue([running, waiting], now: 0)
        let (worker, job) = try test.spawnAndStart()
        _ = test.takeActions()

        test.abandon([waiting.id, running.id], now: 0)
        var actions = test.takeActions()
        #expect(actions.effects.handedToStore.map(\.id) == [waiting.id], "the waiting one leaves at once")
        #expect(test.machine.workers[worker]?.cancelSignalled == true, "the running one's task is cancelled")
        #expect(test.lookup(waiting.id) == nil && test.lookup(running.id) != nil)

        // Whatever the cancelled attempt returns is not recorded, and nothing is left to start.
        #expect(test.startNext(worker, ended: [.completed(job)], now: 0) == nil)
        actions = test.takeActions()
        #expect(actions.effects.handedToStore.map(\.id) == [running.id])
        #expect(!actions.records.contains { $0.kind == .finished }, "no outcome")
        #expect(actions.effects.settlements.isEmpty && records.allSatisfy { $0.settled == nil })
        #expect(test.lookup(running.id) == nil && test.counts == .init())
    }

    @Test("S27: claimed again while the attempt of a lost claim still runs here, that attempt ends under the new claim")
    func reclaimedWhileStopping() throws {
        var test = try MachineUnderTest(bunchSize: 1, sharing: true)
        let operation = CallOperation(kind: "noop")
        try test.enqueue([operation], now: 0)
        let (worker, job) = try test.spawnAndStart()
        test.abandon([operation.id], now: 0)
        let stored = StoredOperation(
            operation: operation, snapshot: 1, attempts: 1, enqueuedAt: Date(timeIntervalSince1970: 0))
        let finished = test.adopt([stored], now: 0)
        #expect(finished.isEmpty)
        _ = test.takeActions()
        #expect(test.startNext(worker, ended: [.completed(job)], now: 0) == nil)
        let actions = test.takeActions()
        #expect(actions.records.contains { $0.kind == .finished && $0.operationID == operation.id }, "recorded")
        #expect(actions.effects.handedToStore.isEmpty)
        #expect(test.state(of: operation.id) == .finished(.completed(Data())))
    }

    @Test("S8: on its own store, a retry stays in the graph, waiting for its time")
    func retryStaysHere() throws {
        var test = try MachineUnderTest(bunchSize: 1)
        try test.enqueue([CallOperation(kind: "noop")], now: 0)
        let (worker, job) = try test.spawnAndStart()
        let retry = PipelineStateMachine.EndedAttempt(
            slot: job.slot, end: .outcome(.retry(after: .seconds(100), reason: "busy")))
        #expect(test.startNext(worker, ended: [retry], now: 0) == nil)
        #expect(test.takeActions().effects.handedToStore.isEmpty)
        #expect(test.state(of: job.record.id) == .pending(.retry(at: Date(timeIntervalSince1970: 100))))
    }

    @Test("S29: on a fleet, each operation is announced enqueued once, before its start, whichever route comes first")
    func enqueuedAnnouncedOnce() throws {
        var test = try MachineUnderTest(bunchSize: 4, sharing: true)
        _ = try test.subscribe(MachineUnderTest.Subscriber(), to: nil)
        _ = test.takeActions()
        func stored(_ operation: CallOperation) -> StoredOperation {
            var numbered = operation
            numbered.snapshot = 7
            return StoredOperation(
                operation: numbered, snapshot: 7, attempts: 0, enqueuedAt: Date(timeIntervalSince1970: 0))
        }
        func logged(_ operation: CallOperation, _ kind: CallEvent.Kind) -> SharedEvent {
            SharedEvent(
                operationID: operation.id, sequenceName: .data, kind: kind, date: Date(timeIntervalSince1970: 0))
        }
        func claim(_ operation: CallOperation) { test.claim([stored(operation)], now: 0) }
        func answer(_ operation: CallOperation) {
            test.endSharedCommit([operation], snapshot: 7, announced: [operation.id])
        }
        func log(_ events: [SharedEvent]) { test.publish(events) }
        let ownClaimedFirst = CallOperation(kind: "noop")
        let ownLoggedFirst = CallOperation(kind: "noop")
        let ownRunElsewhere = CallOperation(kind: "noop")
        let otherLoggedFirst = CallOperation(kind: "noop")
        let otherClaimedFirst = CallOperation(kind: "noop")
        test.machine.beginSharedCommit([ownClaimedFirst.id, ownLoggedFirst.id, ownRunElsewhere.id])

        claim(ownClaimedFirst)
        answer(ownClaimedFirst)
        log([logged(ownClaimedFirst, .enqueued(snapshot: 7))])
        log([logged(ownLoggedFirst, .enqueued(snapshot: 7))])
        answer(ownLoggedFirst)
        answer(ownRunElsewhere)
        log([logged(ownRunElsewhere, .enqueued(snapshot: 7)), logged(ownRunElsewhere, .started(attempt: 1))])
        log([logged(otherLoggedFirst, .enqueued(snapshot: 7))])
        claim(otherLoggedFirst)
        claim(otherClaimedFirst)
        log([logged(otherClaimedFirst, .enqueued(snapshot: 7))])

        let delivered = test.takeActions().delivered
        for operation in [ownClaimedFirst, ownLoggedFirst, ownRunElsewhere, otherLoggedFirst, otherClaimedFirst] {
            let kinds = delivered.filter { $0.operationID == operation.id }.map(\.kind.name)
            #expect(kinds.filter { $0 == "enqueued" }.count == 1, "\(kinds)")
            #expect(kinds.first == "enqueued", "\(kinds)")
        }
        #expect(test.machine.enqueuesInFlight.isEmpty)
    }
}
