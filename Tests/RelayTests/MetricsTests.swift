import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S14 metrics", .timeLimit(.minutes(3)))
struct MetricsTests {
    @Test("S14: percentiles are right on a known workload")
    func percentilesOnKnownWorkload() async throws {
        try await withManualPoint { point, clock in
            let gates = (0..<100).map { _ in Gate() }
            point.register(
                ClosureExecutor { operation, _ in
                    await gates[Int(operation.persistentUserInfo["index"]!)!].wait()
                    return .completed(Data())
                },
                for: .gated
            )
            let recorder = EventRecorder(point)
            // Operation i runs for i + 1 ms; with bunch size 1 it waits for the sum of the earlier run times.
            let handles = try await point.enqueue(
                (0..<100).map { CallOperation(kind: .gated, persistentUserInfo: ["index": "\($0)"]) }
            )
            for index in 0..<100 {
                await recorder.waitForStarts(index + 1)
                clock.advance(by: .milliseconds(index + 1))
                gates[index].open()
            }
            for handle in handles { _ = try await handle.value }
            let metrics = point.metrics()
            #expect(
                metrics.runTime
                    == .init(p50: .milliseconds(50), p90: .milliseconds(90), p99: .milliseconds(99), samples: 100))
            // Queue wait of operation i is 1 + 2 + ... + i ms = i(i+1)/2 ms; nearest rank picks i = 49, 89, 98.
            func wait(_ index: Int) -> Duration { .milliseconds(index * (index + 1) / 2) }
            #expect(metrics.queueWait == .init(p50: wait(49), p90: wait(89), p99: wait(98), samples: 100))
        }
    }

    @Test("S14: counts per state per sequence, and running operations")
    func countsPerState() async throws {
        let gate = Gate()
        try await withManualPoint { point, _ in
            point.registerGated(gate)
            point.register(ClosureExecutor { _, _ in .failed(reason: "x") }, for: "fails")
            point.register(ClosureExecutor { _, _ in .skipped }, for: "skips")
            _ = try await point.enqueue(CallOperation(kind: .noop)).value
            _ = try await point.enqueue(CallOperation(kind: "fails", sequenceName: .uploads)).outcome
            _ = try await point.enqueue(CallOperation(kind: "skips", sequenceName: .uploads)).outcome
            let running = try await point.enqueue(CallOperation(kind: .gated, sequenceName: .downloads))
            let pending = try await point.enqueue(CallOperation(kind: .noop, sequenceName: .downloads))
            let cancelled = try await point.enqueue(CallOperation(kind: .noop, sequenceName: .downloads))
            try await point.cancel(cancelled.id)
            await gate.waitForArrivals(1)
            await point.settled()
            let metrics = point.metrics()
            var data = MetricsSnapshot.Counts()
            data.completed = 1
            var uploads = MetricsSnapshot.Counts()
            uploads.failed = 1
            uploads.skipped = 1
            var downloads = MetricsSnapshot.Counts()
            downloads.running = 1
            downloads.pending = 1
            downloads.cancelled = 1
            #expect(metrics.sequences == [.data: data, .uploads: uploads, .downloads: downloads])
            #expect(metrics.running == 1)
            gate.open()
            _ = try await running.value
            _ = try await pending.value
        }
    }

    @Test("S14: each finished operation carries its metrics")
    func finishedOperationsCarryMetrics() async throws {
        let gate = Gate()
        try await withManualPoint { point, clock in
            point.registerGated(gate)
            let enqueuedAt = point.now
            try await point.suspend()
            let handle = try await point.enqueue(CallOperation(kind: .gated))
            clock.advance(by: .seconds(2))
            let stream = try handle.events()
            try await point.resume()
            await gate.waitForArrivals(1)
            clock.advance(by: .seconds(3))
            gate.open()
            var finished: CallMetrics?
            for await event in stream {
                if case .completed(let metrics) = event.kind.value { finished = metrics }
            }
            let metrics = try #require(finished)
            #expect(metrics.enqueuedAt == enqueuedAt)
            #expect(metrics.queueWait == .seconds(2))
            #expect(metrics.runTime == .seconds(3))
            #expect(metrics.attempts == 1)
            #expect(metrics.finishedAt == enqueuedAt.addingTimeInterval(5))
            #expect((try await handle.status)?.metrics == metrics)
        }
    }

    @Test("S14: the periodic metrics stream ticks on the DataPoint's clock")
    func periodicMetrics() async throws {
        try await withManualPoint { point, clock in
            var iterator = point.metrics(every: .seconds(10)).makeAsyncIterator()
            _ = try await point.enqueue(CallOperation(kind: .noop)).value
            async let first = iterator.next()
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(10))
            let snapshot = await first
            #expect(snapshot?.total.completed == 1)
        }
    }

    @Test("S13/S14: events, statuses, metrics and results print as words, not as raw structs")
    func descriptionsRead() async throws {
        try await withManualPoint { point, _ in
            let recorder = EventRecorder(point)
            let operation = CallOperation(kind: .echo, payload: Data("hi".utf8))
            _ = try await point.execute(operation)
            await recorder.waitForTerminal(of: operation.id)
            let events = recorder.events.filter { $0.operationID == operation.id }
            #expect(events.map(\.kind.name) == ["enqueued", "started", "completed"])
            #expect(events.map(\.kind.isCompleted) == [false, false, true])
            let dated = try Regex(#"^#2 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "#)
            #expect(events[1].description.contains(dated))
            #expect(events[1].description.hasSuffix("\(operation.id) data: started attempt 1"))
            #expect(events[2].kind.description.hasPrefix("completed: 1 attempt, waited 0 ns, ran 0 ns"))

            let status = try #require(try await point.status(of: operation.id))
            #expect(status.state.description == "finished: completed (2 B)")
            #expect(
                status.description.hasPrefix("\(operation.id) in data, commit 1: finished: completed (2 B); 1 attempt"))
            let metrics = point.metrics()
            #expect(metrics.total.description == "0 pending, 0 running, 1 completed, 0 skipped, 0 failed, 0 cancelled")
            #expect(metrics.description.contains("queue wait p50 0 ns, p90 0 ns, p99 0 ns over 1 sample"))
            #expect(CallStatus.Waiting.dependencies(2).description == "waiting for 2 dependencies")
            #expect(CallResult.cancelled(.requested).description == "cancelled by request")
            #expect(
                CallOutcome.retry(after: .milliseconds(1500), reason: "busy").description == "retry after 1.5 s: busy")

            // Nothing prints a struct's fields raw, nor a sentinel for a missing value.
            let printed = (events.map(\.description) + [status.description, metrics.description]).joined()
            for raw in ["CallMetrics(", "Optional(", "-9223372036854775808", "attoseconds"] {
                #expect(!printed.contains(raw))
            }
        }
    }
}
