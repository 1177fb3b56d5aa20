import Foundation
import RelayTesting
import Synchronization
import Testing

@testable import Relay

/// Start times given at enqueue: a hold of its own context, in the same commit.
@Suite("S10 start times at enqueue", .timeLimit(.minutes(3)))
struct ScheduledStartTests {
    @Test("S10: an operation enqueued after a delay waits for it on the clock, then runs")
    func delayWaitsForTheClock() async throws {
        try await withManualPoint { point, clock in
            let until = point.now.addingTimeInterval(60)
            let handle = try await point.enqueue(CallOperation(kind: .echo, payload: Data([7])), after: .seconds(60))
            await point.settled()
            #expect((try await handle.status)?.state == .pending(.held(until: until)))
            #expect(point.pipeline.holds(of: handle.id) == [CallOperation.startContext: until])
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(59))
            await point.settled()
            #expect((try await handle.status)?.state == .pending(.held(until: until)))
            clock.advance(by: .seconds(1))
            #expect(try await handle.value == Data([7]))
        }
    }

    @Test("S10: a start date holds every operation of the commit, dependencies or not, and a hold moves it")
    func startDateHoldsTheCommit() async throws {
        try await withManualPoint { point, _ in
            let start = point.now.addingTimeInterval(3600)
            let first = CallOperation(kind: .echo)
            var second = CallOperation(kind: .echo)
            second.addDependency(first)
            let handles = try await point.enqueue([first, second], at: start)
            await point.settled()
            #expect((try await handles[0].status)?.state == .pending(.held(until: start)))
            // The start is a hold of its own context: releasing it lets the operation go at once.
            try await point.hold(first.id, until: nil, context: CallOperation.startContext)
            _ = try await handles[0].value
            await point.settled()
            #expect((try await handles[1].status)?.state == .pending(.held(until: start)))
            // An operation known already keeps its own schedule when enqueued again with a start.
            let again = try await point.enqueue(first, at: start)
            #expect(try await again.value == Data())
        }
    }

    @Test("S10/S16: a start time given at enqueue, or in a transaction, survives a restart")
    func startSurvivesRestart() async throws {
        try await withTemporaryFolder { folder in
            let clock = ManualClock()
            let delayed = CallOperation(kind: .echo, payload: Data([1]))
            let staged = CallOperation(kind: .echo, payload: Data([2]))
            let enqueuedAt = Mutex(Date.distantPast)
            let reopened = try await DataPoint.crashAndReopen(
                at: folder.url, clock: clock, configuration: testConfiguration, prepare: { $0.registerBasics() }
            ) { point in
                try point.register(Customer.self, as: "customers")
                enqueuedAt.withLock { $0 = point.now }
                try await point.enqueue(delayed, after: .seconds(30))
                try await point.transaction { tx in
                    try tx.upsert(Customer(id: "ada", name: "Ada"))
                    tx.enqueue(staged, after: .seconds(90))
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await reopened.run() }
                // Start times are stored as dates, to the microsecond.
                func startsAfter(_ id: UUID) -> TimeInterval? {
                    reopened.pipeline.holds(of: id)?[CallOperation.startContext].map {
                        $0.timeIntervalSince(enqueuedAt.withLock { $0 })
                    }
                }
                #expect(try abs(#require(startsAfter(delayed.id)) - 30) < 0.001)
                #expect(try abs(#require(startsAfter(staged.id)) - 90) < 0.001)
                await clock.waitForSleepers(1)
                clock.advance(by: .seconds(30))
                #expect(try await reopened.handle(for: delayed.id).value == Data([1]))
                await reopened.settled()
                let state = try await reopened.handle(for: staged.id).status?.state
                var held = false
                if case .pending(let waiting) = state, case .held = waiting.value { held = true }
                #expect(held, "the staged operation is \(String(describing: state))")
                await clock.waitForSleepers(1)
                clock.advance(by: .seconds(60))
                #expect(try await reopened.handle(for: staged.id).value == Data([2]))
                try await reopened.shutdown()
                try await group.waitForAll()
            }
        }
    }
}
