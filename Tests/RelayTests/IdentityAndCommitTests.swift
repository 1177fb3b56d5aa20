import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S1 identity and S2 commits", .timeLimit(.minutes(3)))
struct IdentityAndCommitTests {
    @Test("S1: enqueueing a known id returns the existing handle and changes nothing")
    func knownIDReturnsExistingHandle() async throws {
        let storage = RecordingStorage()
        try await withManualPoint(storage: storage) { point, _ in
            try await point.suspend()
            let operation = CallOperation(kind: .noop)
            let first = try await point.enqueue(operation)
            let recorder = EventRecorder(point)
            let recordsBefore = storage.records.count
            let second = try await point.enqueue(operation)
            #expect(first == second)
            #expect(point.pipeline.lastSnapshot == 1)
            #expect(storage.records.count == recordsBefore)
            #expect(recorder.events.isEmpty)
            #expect(point.metrics().total.pending == 1)
        }
    }

    @Test("S1: in a commit that mixes new and known ids, each handle awaits its own operation's outcome")
    func mixedCommitHandles() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            let known = CallOperation(kind: .echo, payload: Data("known".utf8))
            try await point.enqueue(known)
            let first = CallOperation(kind: .echo, payload: Data("first".utf8))
            let second = CallOperation(kind: .echo, payload: Data("second".utf8))
            let handles = try await point.enqueue([first, known, second, first])
            #expect(handles.map(\.id) == [first.id, known.id, second.id, first.id])
            #expect(point.pipeline.lastSnapshot == 2)
            #expect(point.metrics().total.pending == 3)
            try await point.resume()
            var values: [String] = []
            for handle in handles { values.append(String(decoding: try await handle.value, as: UTF8.self)) }
            #expect(values == ["first", "known", "second", "first"])
        }
    }

    @Test("S2/S16: commits beside running workers with no retention keep every outcome and forget every finished id")
    func commitsBesideWorkersWithoutRetention() async throws {
        let configuration = DataPoint.Configuration(retention: .zero, shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, _ in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
            let committed = try await withThrowingTaskGroup(of: [(CallOperation, CallHandle)].self) { group in
                for task in 0..<4 {
                    group.addTask {
                        var committed: [(CallOperation, CallHandle)] = []
                        for commit in 0..<25 {
                            let operations = (0..<40).map { number in
                                CallOperation(kind: .echo, payload: Data("\(task)-\(commit)-\(number)".utf8))
                            }
                            committed += zip(operations, try await point.enqueue(operations))
                        }
                        return committed
                    }
                }
                var all: [(CallOperation, CallHandle)] = []
                for try await committed in group { all += committed }
                return all
            }
            #expect(committed.count == 4_000)
            for (operation, handle) in committed {
                #expect(try await handle.value == operation.payload)
            }
            // The next commit forgets every operation finished before it; an id forgotten and enqueued anew runs anew.
            let (first, _) = try #require(committed.first)
            _ = try await point.enqueue(CallOperation(kind: .noop)).outcome
            try await point.enqueue(CallOperation(kind: .noop))
            #expect(try await point.states(of: committed.map(\.0.id)).allSatisfy { $0 == nil })
            await #expect(throws: RelayError.self) { try await point.handle(for: first.id) }
            let again = try await point.enqueue(first)
            #expect(try await again.value == first.payload)
            #expect(point.metrics().total.completed >= 4_002)
        }
    }

    @Test("S5/S16: with no retention, a commit that depends on an operation finishing beside it runs or is refused")
    func dependenciesOnFinishingOperationsWithoutRetention() async throws {
        let configuration = DataPoint.Configuration(retention: .zero, shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, _ in
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 8))
            var previous = CallOperation(kind: .noop)
            var handles = [try await point.enqueue(previous)]
            // Each commit names the operation before it, which the workers may be finishing, and forgetting, while
            // the commit is admitted: the commit then either waits for it or finds it forgotten, never half of each.
            for _ in 0..<2_000 {
                let next = CallOperation(kind: .noop, dependencies: [previous.id])
                do {
                    handles.append(try await point.enqueue(next))
                    previous = next
                } catch let error as RelayError where error.code == .unknownDependency {
                    previous = CallOperation(kind: .noop)
                    handles.append(try await point.enqueue(previous))
                }
            }
            for handle in handles { #expect(try await handle.outcome == .completed(Data())) }
            #expect(handles.count == 2_001)
            #expect(point.metrics().total.completed == 2_001)
        }
    }

    @Test("S1: every operation has a UUID, and a handle re-attaches by id")
    func handleReattaches() async throws {
        try await withManualPoint { point, _ in
            let operation = CallOperation(kind: .echo, payload: Data("x".utf8))
            try await point.enqueue(operation)
            let handle = try await point.handle(for: operation.id)
            #expect(try await handle.value == Data("x".utf8))
            #expect(handle.id == operation.id)
        }
    }

    @Test("S2: each enqueue call is one commit numbered one more than the previous")
    func snapshotsIncrease() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            let single = CallOperation(kind: .noop)
            let batch = (0..<3).map { _ in CallOperation(kind: .noop) }
            let last = CallOperation(kind: .noop)
            try await point.enqueue(single)
            try await point.enqueue(batch)
            try await point.enqueue(last)
            #expect(point.pipeline.operation(single.id)?.snapshot == 1)
            #expect(batch.map { point.pipeline.operation($0.id)?.snapshot } == [2, 2, 2])
            #expect(point.pipeline.operation(last.id)?.snapshot == 3)
            #expect(point.pipeline.lastSnapshot == 3)
        }
    }

    @Test("S2: commits made at once from many tasks each get their own snapshot, and every operation carries it")
    func concurrentCommitsGetTheirOwnSnapshots() async throws {
        try await withManualPoint { point, _ in
            try await point.suspend()
            let commits = (0..<64).map { size in (0...size % 5).map { _ in CallOperation(kind: .noop) } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for commit in commits {
                    group.addTask { try await point.enqueue(commit) }
                }
                try await group.waitForAll()
            }
            var seen: Set<UInt64> = []
            for commit in commits {
                let snapshots = Set(commit.map { point.pipeline.operation($0.id)?.snapshot })
                #expect(snapshots.count == 1, "a commit's operations carry different snapshots: \(snapshots)")
                if let snapshot = snapshots.first ?? nil { seen.insert(snapshot) }
            }
            #expect(seen == Set(1...64))
            #expect(point.pipeline.lastSnapshot == 64)
        }
    }

    @Test("S2: a commit is atomic: one bad operation rejects all of them")
    func commitIsAtomic() async throws {
        let storage = RecordingStorage()
        try await withManualPoint(storage: storage) { point, _ in
            let recorder = EventRecorder(point)
            let recordsBefore = storage.records.count
            let good = CallOperation(kind: .noop)
            let bad = CallOperation(kind: .noop, dependencies: [UUID()])
            await #expect(throws: RelayError.self) { try await point.enqueue([good, bad]) }
            #expect(try await point.status(of: good.id) == nil)
            #expect(try await point.status(of: bad.id) == nil)
            #expect(point.pipeline.lastSnapshot == 0)
            #expect(storage.records.count == recordsBefore)
            #expect(recorder.events.isEmpty)
            // The good operation is not half-applied: it can be enqueued on its own afterwards.
            try await point.enqueue(good)
            #expect(point.pipeline.lastSnapshot == 1)
        }
    }

    @Test("S2: a commit's operations are recorded together in one commit record")
    func commitRecordHoldsTheBatch() async throws {
        let storage = RecordingStorage()
        try await withManualPoint(storage: storage) { point, _ in
            try await point.suspend()
            let batch = (0..<4).map { _ in CallOperation(kind: .noop) }
            try await point.enqueue(batch)
            let commits = storage.records.compactMap { record -> (UInt64, [UUID])? in
                guard record.kind == .commit, let snapshot = record.snapshot else { return nil }
                return (snapshot, record.operations.map(\.id))
            }
            #expect(commits.count == 1)
            #expect(commits.first?.0 == 1)
            #expect(commits.first?.1 == batch.map(\.id))
        }
    }
}
