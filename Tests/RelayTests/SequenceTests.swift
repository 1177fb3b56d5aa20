import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S3 sequences", .timeLimit(.minutes(3)))
struct SequenceTests {
    @Test("S3: every DataPoint has data, downloads and uploads, each with bunch size 1")
    func defaultSequences() async throws {
        try await withManualPoint { point, _ in
            for name in [CallSequence.Name.data, .downloads, .uploads] {
                let sequence = try #require(point.sequence(named: name))
                #expect(await sequence.bunchSize == 1)
                #expect(await sequence.algorithm == .flat)
            }
        }
    }

    @Test("S3: an operation names its sequence, data by default")
    func defaultSequenceIsData() {
        #expect(CallOperation(kind: .noop).sequenceName == .data)
    }

    @Test("S3: an unknown sequence at enqueue is a typed error and nothing is enqueued")
    func unknownSequence() async throws {
        try await withManualPoint { point, _ in
            let operation = CallOperation(kind: .noop, sequenceName: "nowhere")
            let error = await #expect(throws: RelayError.self) { try await point.enqueue(operation) }
            #expect(error?.code == .unknownSequence)
            let status = try await point.status(of: operation.id)
            #expect(status == nil)
            #expect(point.pipeline.lastSnapshot == 0)
        }
    }

    @Test("S3: a bunch size below 1 is a typed error", arguments: [0, -1, Int.min])
    func bunchSizeBelowOne(size: Int) async throws {
        let error = #expect(throws: RelayError.self) { try CallSequence(name: "lane", bunchSize: size) }
        #expect(error?.code == .invalidBunchSize)
        try await withManualPoint { point, _ in
            let data = try #require(point.sequence(named: .data))
            let rejected = await #expect(throws: RelayError.self) { try await data.setBunchSize(size) }
            #expect(rejected?.code == .invalidBunchSize)
            #expect(await data.bunchSize == 1)
        }
    }

    @Test("S3: upserting adds a sequence, and upserting the same name reconfigures it")
    func upsertAddsAndReconfigures() async throws {
        try await withManualPoint { point, _ in
            let lane = try CallSequence(name: "webhooks", bunchSize: 3)
            try await point.upsertCallSequence(lane)
            #expect(await point.sequence(named: "webhooks")?.bunchSize == 3)
            try await point.upsertCallSequence(CallSequence(name: "webhooks", bunchSize: 7, algorithm: .commitGraph))
            #expect(await lane.bunchSize == 7)
            #expect(await lane.algorithm == .commitGraph)
            let handle = try await point.enqueue(CallOperation(kind: .echo, sequenceName: "webhooks"))
            #expect(try await handle.value == Data())
        }
    }

    @Test("S3: a sequence belongs to one DataPoint")
    func sequenceBelongsToOnePoint() async throws {
        let lane = try CallSequence(name: "shared")
        try await withManualPoint { first, _ in
            try await first.upsertCallSequence(lane)
            try await withManualPoint { second, _ in
                let error = await #expect(throws: RelayError.self) { try await second.upsertCallSequence(lane) }
                #expect(error?.code == .sequenceAttached)
            }
        }
    }

    @Test("S3: at reload, operations of an unregistered sequence wait, visible in status, until it is registered")
    func reloadedOperationsWaitForTheirSequence() async throws {
        let operation = CallOperation(kind: .echo, sequenceName: "reports", payload: Data("r".utf8))
        let stored = StoredState(
            lastSnapshot: 4,
            operations: [StoredOperation(operation: operation, snapshot: 4, enqueuedAt: Date())]
        )
        try await withManualPoint(storage: RecordingStorage(stored: stored)) { point, _ in
            #expect(point.pipeline.lastSnapshot == 4)
            let status = try #require(try await point.status(of: operation.id))
            #expect(status.state == .pending(.sequenceNotRegistered("reports")))
            let enqueueError = await #expect(throws: RelayError.self) {
                try await point.enqueue(CallOperation(kind: .noop, sequenceName: "reports"))
            }
            #expect(enqueueError?.code == .unknownSequence)
            try await point.upsertCallSequence(CallSequence(name: "reports"))
            let handle = try await point.handle(for: operation.id)
            #expect(try await handle.value == Data("r".utf8))
        }
    }

    @Test("S3: at reload, operations whose kind has no executor wait until one is registered")
    func reloadedOperationsWaitForTheirExecutor() async throws {
        let operation = CallOperation(kind: "later")
        let stored = StoredState(
            lastSnapshot: 1,
            operations: [StoredOperation(operation: operation, snapshot: 1, enqueuedAt: Date())]
        )
        try await withManualPoint(storage: RecordingStorage(stored: stored)) { point, _ in
            #expect(try await point.status(of: operation.id)?.state == .pending(.executorNotRegistered("later")))
            point.register(ClosureExecutor { _, _ in .completed(Data("done".utf8)) }, for: "later")
            let handle = try await point.handle(for: operation.id)
            #expect(try await handle.value == Data("done".utf8))
        }
    }

    @Test("S3: a registered sequence is durable: after a reopen it is there as configured, its operations run")
    func registeredSequenceSurvivesReopen() async throws {
        try await withTemporaryFolder { folder in
            let operation = CallOperation(kind: .echo, sequenceName: "reports", payload: Data("r".utf8))
            let echo: [CallKind: any CallExecutor] = [
                .echo: ClosureExecutor { operation, _ in .completed(operation.payload) }
            ]
            do {
                let point = try await DataPoint(storage: .file(at: folder.url), executors: echo)
                try await point.upsertCallSequence(CallSequence(name: "reports", bunchSize: 3, algorithm: .commitGraph))
                try await point.enqueue(operation)
                try await point.shutdown()
            }
            let point = try await DataPoint(storage: .file(at: folder.url), executors: echo)
            let sequence = try #require(point.sequence(named: "reports"))
            #expect(await sequence.bunchSize == 3)
            #expect(await sequence.algorithm == .commitGraph)
            #expect(try await point.status(of: operation.id)?.state == .pending(.ready))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await point.run() }
                #expect(try await point.handle(for: operation.id).value == Data("r".utf8))
                // A later upsert still reconfigures it, and that too is stored.
                try await point.upsertCallSequence(CallSequence(name: "reports", bunchSize: 5))
                #expect(await point.sequence(named: "reports")?.bunchSize == 5)
                try await point.shutdown()
                try await group.waitForAll()
            }
            let reopened = try await DataPoint(storage: .file(at: folder.url))
            #expect(await reopened.sequence(named: "reports")?.bunchSize == 5)
            #expect(await reopened.sequence(named: "reports")?.algorithm == .flat)
            try await reopened.shutdown()
        }
    }

    @Test("S2/S3: new commits continue after the stored snapshot")
    func snapshotsContinueAfterReload() async throws {
        let stored = StoredState(lastSnapshot: 41)
        try await withManualPoint(storage: RecordingStorage(stored: stored)) { point, _ in
            let operation = CallOperation(kind: .noop)
            try await point.enqueue(operation)
            #expect(point.pipeline.operation(operation.id)?.snapshot == 42)
        }
    }

    @Test("S3: a sequence upserted while a DataPoint starts its supervisors gets one, and its operations run")
    func upsertWhileStarting() async throws {
        // The upsert races the engine's first look for sequences to supervise; a lost supervisor leaves the
        // operation waiting for ever, which the suite's time limit reports.
        for round in 0..<300 {
            let point = try await DataPoint(storage: .volatile, configuration: testConfiguration)
            point.registerBasics()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await point.run() }
                let late = try CallSequence(name: "late", bunchSize: 4)
                try await point.ready()
                try await point.upsertCallSequence(late)
                let payload = Data("round \(round)".utf8)
                let handle = try await point.enqueue(CallOperation(kind: .echo, sequenceName: "late", payload: payload))
                #expect(try await handle.value == payload)
                try await point.shutdown()
                try await group.waitForAll()
            }
        }
    }
}
