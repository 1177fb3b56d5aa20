import Foundation
import Relay
import RelayTesting
import Synchronization
import Testing

@Suite("S9 suspension and S10 holds", .timeLimit(.minutes(3)))
struct SuspensionAndHoldTests {
    @Test("S9: sequence suspension is counted: nothing starts until every suspend is resumed")
    func sequenceSuspensionIsCounted() async throws {
        try await withManualPoint { point, _ in
            let data = try #require(point.sequence(named: .data))
            #expect(try await data.suspend() == 1)
            #expect(try await data.suspend() == 2)
            let handle = try await point.enqueue(CallOperation(kind: .echo))
            let other = try await point.enqueue(CallOperation(kind: .echo, sequenceName: .downloads))
            _ = try await other.value
            await point.settled()
            #expect((try await handle.status)?.state == .pending(.suspended))
            #expect(try await data.resume() == 1)
            await point.settled()
            #expect((try await handle.status)?.state == .pending(.suspended))
            #expect(try await data.resume() == 0)
            #expect(try await handle.value == Data())
            #expect(try await data.resume() == 0)
        }
    }

    @Test("S9: DataPoint suspension is counted and covers every sequence")
    func pointSuspensionIsCounted() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            try await point.suspend()
            let handles = try await point.enqueue([
                CallOperation(kind: .noop), CallOperation(kind: .noop, sequenceName: .uploads),
            ])
            try await point.resume()
            await point.settled()
            #expect(try await point.states(of: handles.map(\.id)).allSatisfy { $0 == .pending(.suspended) })
            try await point.resume()
            for handle in handles { _ = try await handle.value }
        }
    }

    @Test("S9: while suspended, running operations finish and nothing new starts")
    func runningFinishWhileSuspended() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate)
            let running = try await point.enqueue(CallOperation(kind: .gated))
            let waiting = try await point.enqueue(CallOperation(kind: .noop))
            await gate.waitForArrivals(1)
            try await point.suspend()
            gate.open()
            _ = try await running.value
            await point.settled()
            #expect((try await waiting.status)?.state == .pending(.suspended))
            try await point.resume()
            _ = try await waiting.value
        }
    }

    @Test("S9/S13: suspension and resumption are reported once each, with the reason")
    func suspensionEvents() async throws {
        try await withManualPoint { point, _ in
            let recorder = EventRecorder(point)
            let uploads = try #require(point.sequence(named: .uploads))
            try await uploads.suspend(reason: "maintenance")
            try await uploads.suspend(reason: "again")
            try await uploads.resume()
            try await uploads.resume(reason: "done")
            let kinds = recorder.events.map(\.kind)
            #expect(kinds == [.suspended(reason: "maintenance"), .resumed(reason: "done")])
            #expect(recorder.events.allSatisfy { $0.sequenceName == .uploads && $0.operationID == nil })
        }
    }

    @Test("S9: a sequence suspended before it is added stays suspended")
    func suspendedBeforeUpsert() async throws {
        try await withManualPoint { point, _ in
            let lane = try CallSequence(name: "later")
            try await lane.suspend()
            try await point.upsertCallSequence(lane)
            #expect(await lane.suspensionCount == 1)
            let handle = try await point.enqueue(CallOperation(kind: .noop, sequenceName: "later"))
            await point.settled()
            #expect((try await handle.status)?.state == .pending(.suspended))
            try await lane.resume()
            _ = try await handle.value
        }
    }

    @Test("S10: a hold keeps an operation from starting until the manual clock passes it")
    func holdReleasedByClock() async throws {
        try await withManualPoint { point, clock in
            try await point.suspend()
            let handle = try await point.enqueue(CallOperation(kind: .echo))
            let until = point.now.addingTimeInterval(5)
            try await point.hold(handle.id, until: until, context: "rate")
            try await point.resume()
            await point.settled()
            #expect((try await handle.status)?.state == .pending(.held(until: until)))
            #expect(point.pipeline.holds(of: handle.id) == ["rate": until])
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(4))
            await point.settled()
            #expect((try await handle.status)?.state == .pending(.held(until: until)))
            clock.advance(by: .seconds(1))
            _ = try await handle.value
        }
    }

    @Test("S10: the latest of several holds wins, and releasing a hold re-evaluates")
    func latestHoldWins() async throws {
        try await withManualPoint { point, clock in
            try await point.suspend()
            let handle = try await point.enqueue(CallOperation(kind: .echo))
            let short = point.now.addingTimeInterval(2)
            let long = point.now.addingTimeInterval(8)
            try await point.hold(handle.id, until: short, context: "a")
            try await point.hold(handle.id, until: long, context: "b")
            try await point.resume()
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(3))
            await point.settled()
            #expect((try await handle.status)?.state == .pending(.held(until: long)))
            try await point.hold(handle.id, until: nil, context: "b")
            _ = try await handle.value
        }
    }

    @Test("S10: holding a ready operation takes it out of its queue until the hold passes")
    func holdingAReadyOperation() async throws {
        let gate = Gate()
        try await withManualPoint { point, clock in
            point.registerGated(gate)
            let blocker = try await point.enqueue(CallOperation(kind: .gated))
            let first = try await point.enqueue(CallOperation(kind: .noop))
            let second = try await point.enqueue(CallOperation(kind: .noop))
            await gate.waitForArrivals(1)
            let recorder = EventRecorder(point)
            try await point.hold(first.id, until: point.now.addingTimeInterval(1))
            gate.open()
            _ = try await blocker.value
            _ = try await second.value
            #expect(try await first.status?.state.isTerminal == false)
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(1))
            _ = try await first.value
            #expect(recorder.startOrder() == [second.id, first.id])
        }
    }

    @Test("S13: while suspensions interrupt batches, started events match the attempts executors ran")
    func startsMatchRuns() async throws {
        try await withManualPoint { point, _ in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 2))
            let runs = Mutex<[UUID: Int]>([:])
            point.register(
                ClosureExecutor { operation, _ in
                    let distinct = runs.withLock { runs in
                        runs[operation.id, default: 0] += 1
                        return runs.count
                    }
                    // Now and then an executor suspends everything midway, which stops the batches of the others.
                    if distinct % 1000 == 0 {
                        _ = try await point.suspend()
                        _ = try await point.resume()
                    }
                    return .completed(Data())
                }, for: "counted")
            let count = 20_000
            let stream = point.events(bufferSize: 1 << 17)
            let handles = try await point.enqueue((0..<count).map { _ in CallOperation(kind: "counted") })
            for handle in handles { _ = try await handle.value }
            var started: [UUID: Int] = [:]
            var completed = 0
            for await event in stream {
                if event.kind.isStarted, let id = event.operationID { started[id, default: 0] += 1 }
                if case .completed = event.kind.value { completed += 1 }
                if completed == count { break }
            }
            let ran = runs.withLock { $0 }
            #expect(ran.count == count)
            #expect(started == ran)
        }
    }
}
