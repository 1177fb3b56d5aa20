import Foundation
import Relay
import RelayTesting
import Testing

// Three minutes: ThreadSanitizer runs the suite's 10,000- and 100,000-operation tests in about one, beside the rest.
@Suite("S5 dependencies", .timeLimit(.minutes(3)))
struct DependencyTests {
    @Test("S5: dependencies across sequences: a dependent never starts before its dependencies finished")
    func crossSequenceOrdering() async throws {
        try await withManualPoint { point, _ in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
            try await point.upsertCallSequence(CallSequence(name: .downloads, bunchSize: 8))
            try await point.upsertCallSequence(CallSequence(name: .uploads, bunchSize: 8))
            let recorder = EventRecorder(point)
            let names: [CallSequence.Name] = [.data, .downloads, .uploads]
            var generator = SplitMix64(seed: 7)
            var operations: [CallOperation] = []
            for index in 0..<300 {
                var dependencies = Set<UUID>()
                for _ in 0..<Int.random(in: 0...3, using: &generator) where index > 0 {
                    dependencies.insert(operations[Int.random(in: 0..<index, using: &generator)].id)
                }
                operations.append(
                    CallOperation(kind: .noop, sequenceName: names[index % 3], dependencies: dependencies)
                )
            }
            // Several commits, so later commits depend on earlier ones too.
            for chunk in stride(from: 0, to: operations.count, by: 50) {
                try await point.enqueue(Array(operations[chunk..<chunk + 50]))
            }
            await recorder.waitForTerminals(operations.count)
            var started: [UUID: UInt64] = [:]
            var finished: [UUID: UInt64] = [:]
            for event in recorder.events {
                guard let id = event.operationID else { continue }
                if event.kind.isStarted, started[id] == nil { started[id] = event.sequenceNumber }
                if event.kind.isTerminal { finished[id] = event.sequenceNumber }
            }
            for operation in operations {
                let start = try #require(started[operation.id])
                for dependency in operation.dependencies {
                    #expect(try #require(finished[dependency]) < start)
                }
            }
            #expect(point.metrics().total.completed == operations.count)
        }
    }

    @Test("S5: a cycle is rejected, names the cycle, and the graph is unchanged")
    func cycleRejected() async throws {
        let storage = RecordingStorage()
        try await withManualPoint(storage: storage) { point, _ in
            let recorder = EventRecorder(point)
            let recordsBefore = storage.records.count
            let (a, b, c) = (UUID(), UUID(), UUID())
            let operations = [
                CallOperation(id: a, kind: .noop, dependencies: [c]),
                CallOperation(id: b, kind: .noop, dependencies: [a]),
                CallOperation(id: c, kind: .noop, dependencies: [b]),
            ]
            let error = await #expect(throws: RelayError.self) { try await point.enqueue(operations) }
            #expect(error?.code == .dependencyCycle)
            #expect(Set(error?.operationIDs ?? []) == [a, b, c])
            #expect(error?.message.contains(a.uuidString) == true)
            let states = try await point.states(of: [a, b, c])
            #expect(states.allSatisfy { $0 == nil })
            #expect(point.pipeline.lastSnapshot == 0)
            #expect(storage.records.count == recordsBefore)
            #expect(recorder.events.isEmpty)
        }
    }

    @Test("S5: a self-dependency is a cycle")
    func selfDependency() async throws {
        try await withManualPoint { point, _ in
            let id = UUID()
            let error = await #expect(throws: RelayError.self) {
                try await point.enqueue(CallOperation(id: id, kind: .noop, dependencies: [id]))
            }
            #expect(error?.code == .dependencyCycle)
            #expect(error?.operationIDs == [id])
            let status = try await point.status(of: id)
            #expect(status == nil)
        }
    }

    @Test("S5: an unknown dependency is a typed error, unlike YapDatabaseCloudCore's silent success")
    func unknownDependency() async throws {
        try await withManualPoint { point, _ in
            let missing = UUID()
            let operation = CallOperation(kind: .noop, dependencies: [missing])
            let error = await #expect(throws: RelayError.self) { try await point.enqueue(operation) }
            #expect(error?.code == .unknownDependency)
            #expect(error?.operationIDs == [operation.id, missing])
            let status = try await point.status(of: operation.id)
            #expect(status == nil)
        }
    }

    @Test("S5: dependencies may come earlier or later in the same commit")
    func dependenciesWithinACommit() async throws {
        try await withManualPoint { point, _ in
            let recorder = EventRecorder(point)
            let first = CallOperation(kind: .noop)
            let third = CallOperation(kind: .noop)
            let second = CallOperation(kind: .noop, dependencies: [third.id, first.id])
            try await point.enqueue([first, second, third])
            await recorder.waitForTerminals(3)
            #expect(recorder.startOrder() == [first.id, third.id, second.id])
        }
    }

    @Test("S5: a failed dependency cancels its dependents transitively, naming the dependency")
    func failureCascades() async throws {
        try await withManualPoint { point, _ in
            point.register(ClosureExecutor { _, _ in .failed(reason: "nope") }, for: "fails")
            let root = CallOperation(kind: "fails")
            let child = CallOperation(kind: .noop, sequenceName: .downloads, dependencies: [root.id])
            let grandchild = CallOperation(kind: .noop, sequenceName: .uploads, dependencies: [child.id])
            let handles = try await point.enqueue([root, child, grandchild])
            #expect(try await handles[0].outcome == .failed(CallFailure(reason: "nope", attempts: 1)))
            #expect(try await handles[1].outcome == .cancelled(.dependencyFailed(root.id)))
            #expect(try await handles[2].outcome == .cancelled(.dependencyCancelled(child.id)))
            let error = await #expect(throws: RelayError.self) { try await handles[2].value }
            #expect(error?.code == .operationCancelled)
        }
    }

    @Test("S5: a cancelled dependency cancels its dependents transitively")
    func cancellationCascades() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            let root = CallOperation(kind: .noop)
            let chain = (0..<100).reduce(into: [root]) { chain, _ in
                chain.append(CallOperation(kind: .noop, dependencies: [chain[chain.count - 1].id]))
            }
            let handles = try await point.enqueue(chain)
            try await point.cancel(root.id)
            #expect(try await handles[0].outcome == .cancelled(.requested))
            for index in 1..<chain.count {
                #expect(try await handles[index].outcome == .cancelled(.dependencyCancelled(chain[index - 1].id)))
            }
            #expect(point.metrics().total.cancelled == chain.count)
        }
    }

    @Test("S5: .runAnyway runs once its dependencies finished, whatever their outcome")
    func runAnyway() async throws {
        try await withManualPoint { point, _ in
            point.register(ClosureExecutor { _, _ in .failed(reason: "nope") }, for: "fails")
            let root = CallOperation(kind: "fails")
            let cleanup = CallOperation(
                kind: .echo,
                dependencies: [root.id],
                payload: Data("cleaned".utf8),
                onDependencyFailure: .runAnyway
            )
            let handles = try await point.enqueue([root, cleanup])
            #expect(try await handles[1].value == Data("cleaned".utf8))
        }
    }

    @Test("S5: a dependency that already completed is satisfied; one that already failed cancels at enqueue")
    func dependenciesOnFinishedOperations() async throws {
        try await withManualPoint { point, _ in
            point.register(ClosureExecutor { _, _ in .failed(reason: "nope") }, for: "fails")
            let done = try await point.enqueue(CallOperation(kind: .noop))
            let failed = try await point.enqueue(CallOperation(kind: "fails"))
            _ = try await done.outcome
            _ = try await failed.outcome
            let afterDone = try await point.enqueue(CallOperation(kind: .echo, dependencies: [done.id]))
            let afterFailed = try await point.enqueue(CallOperation(kind: .noop, dependencies: [failed.id]))
            #expect(try await afterDone.value == Data())
            #expect(try await afterFailed.outcome == .cancelled(.dependencyFailed(failed.id)))
        }
    }

    @Test("S5: a skipped dependency counts as satisfied")
    func skippedSatisfies() async throws {
        try await withManualPoint { point, _ in
            point.register(ClosureExecutor { _, _ in .skipped }, for: "skips")
            let root = CallOperation(kind: "skips")
            let next = CallOperation(kind: .echo, dependencies: [root.id], payload: Data("y".utf8))
            let handles = try await point.enqueue([root, next])
            #expect(try await handles[0].outcome == .skipped)
            #expect(try await handles[1].value == Data("y".utf8))
        }
    }

    @Test("S5: a 100,000-long chain completes, readiness pushed by completions")
    func longChain() async throws {
        try await withManualPoint { point, _ in
            var chain: [CallOperation] = [CallOperation(kind: .noop)]
            chain.reserveCapacity(100_000)
            for _ in 1..<100_000 {
                chain.append(CallOperation(kind: .noop, dependencies: [chain[chain.count - 1].id]))
            }
            let handles = try await point.enqueue(chain)
            _ = try await handles[handles.count - 1].value
            #expect(point.metrics().total.completed == 100_000)
        }
    }
}
