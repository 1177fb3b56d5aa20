import Foundation
import Relay
import RelayTesting
import Testing

// Three minutes: ThreadSanitizer runs the suite's 10,000- and 100,000-operation tests in about one, beside the rest.
@Suite("S4 bunches and S6 priority", .timeLimit(.minutes(3)))
struct BunchAndPriorityTests {
    @Test("S4: the bunch bound is never exceeded over 10,000 operations", arguments: [1, 5, 64])
    func bunchBoundHolds(bunchSize: Int) async throws {
        let tracker = ConcurrencyTracker()
        try await withManualPoint { point, _ in
            point.register(
                ClosureExecutor { _, _ in
                    tracker.enter()
                    // Yielding lets other workers start while this one is still inside, so overlap really happens.
                    await Task.yield()
                    await Task.yield()
                    tracker.leave()
                    return .completed(Data())
                },
                for: "tracked"
            )
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: bunchSize))
            let handles = try await point.enqueue((0..<10_000).map { _ in CallOperation(kind: "tracked") })
            for handle in handles { _ = try await handle.value }
        }
        #expect(tracker.total == 10_000)
        #expect(tracker.maximum <= bunchSize)
        #expect(tracker.maximum >= 1)
    }

    @Test("S4: exactly bunchSize operations run while more are ready")
    func exactlyBunchSizeRun() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate)
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 5))
            let recorder = EventRecorder(point)
            let handles = try await point.enqueue((0..<12).map { _ in CallOperation(kind: .gated) })
            await gate.waitForArrivals(5)
            await point.settled()
            #expect(point.metrics().running == 5)
            #expect(recorder.startOrder() == handles.prefix(5).map(\.id))
            #expect(try await point.states(of: handles.dropFirst(5).map(\.id)).allSatisfy { $0 == .pending(.ready) })
            gate.open()
            for handle in handles { _ = try await handle.value }
            #expect(recorder.startOrder() == handles.map(\.id))
        }
    }

    @Test("S4: equal-priority operations of a sequence start in call order, across commits")
    func callOrder() async throws {
        try await withManualPoint { point, _ in
            let recorder = EventRecorder(point)
            var expected: [UUID] = []
            for commit in 0..<20 {
                let batch = (0..<(commit % 4 + 1)).map { _ in CallOperation(kind: .noop) }
                expected += batch.map(\.id)
                try await point.enqueue(batch)
            }
            await recorder.waitForTerminals(expected.count)
            #expect(recorder.startOrder() == expected)
        }
    }

    @Test("S4: results may finish in any order")
    func resultsInAnyOrder() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate)
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 2))
            let recorder = EventRecorder(point)
            let slow = try await point.enqueue(CallOperation(kind: .gated))
            let fast = try await point.enqueue(CallOperation(kind: .noop))
            _ = try await fast.value
            #expect(try await point.status(of: slow.id)?.state == .running(attempt: 1))
            gate.open()
            _ = try await slow.value
            let finishes = recorder.events.filter(\.kind.isTerminal).compactMap(\.operationID)
            #expect(finishes == [fast.id, slow.id])
            #expect(recorder.startOrder() == [slow.id, fast.id])
        }
    }

    @Test("S4: raising the bunch size takes effect at once; lowering it cancels nothing that runs")
    func changingBunchSize() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate)
            let data = try #require(point.sequence(named: .data))
            let handles = try await point.enqueue((0..<6).map { _ in CallOperation(kind: .gated) })
            await gate.waitForArrivals(1)
            await point.settled()
            #expect(point.metrics().running == 1)
            try await data.setBunchSize(4)
            await gate.waitForArrivals(4)
            await point.settled()
            #expect(point.metrics().running == 4)
            try await data.setBunchSize(1)
            await point.settled()
            #expect(point.metrics().running == 4)
            #expect(point.metrics().total.cancelled == 0)
            gate.open()
            for handle in handles { _ = try await handle.value }
            #expect(point.metrics().total.completed == 6)
        }
    }

    @Test("S6: priority reorders ready operations: higher first, then call order")
    func priorityReordersReady() async throws {
        try await withManualPoint { point, _ in
            let recorder = EventRecorder(point)
            try await point.suspend()
            let low = CallOperation(kind: .noop, priority: 0)
            let high = CallOperation(kind: .noop, priority: 10)
            let middle = CallOperation(kind: .noop, priority: 5)
            let highLater = CallOperation(kind: .noop, priority: 10)
            let lowLater = CallOperation(kind: .noop, priority: 0)
            try await point.enqueue([low, high])
            try await point.enqueue([middle, highLater, lowLater])
            try await point.resume()
            await recorder.waitForTerminals(5)
            #expect(recorder.startOrder() == [high.id, highLater.id, middle.id, low.id, lowLater.id])
        }
    }

    @Test("S6: priority never overrides dependencies or commit order under .commitGraph")
    func priorityNeverOverridesDependencies() async throws {
        try await withManualPoint { point, _ in
            let recorder = EventRecorder(point)
            try await point.suspend()
            let first = CallOperation(kind: .noop, priority: -5)
            let urgent = CallOperation(kind: .noop, dependencies: [first.id], priority: 100)
            let other = CallOperation(kind: .noop, priority: 1)
            try await point.enqueue([first, urgent, other])
            try await point.resume()
            await recorder.waitForTerminals(3)
            #expect(recorder.startOrder() == [other.id, first.id, urgent.id])
        }
    }
}
