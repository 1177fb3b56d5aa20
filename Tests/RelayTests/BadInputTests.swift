import Foundation
import Relay
import RelayTesting
import Testing

/// One kind of bad input, applied to a DataPoint that already holds some state.
struct BadInput: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let expected: RelayError.Code
    let apply: @Sendable (DataPoint, _ known: CallOperation) async throws -> Void

    static let all: [BadInput] = [
        BadInput(testDescription: "unknown sequence", expected: .unknownSequence) { point, _ in
            try await point.enqueue(CallOperation(kind: .noop, sequenceName: "missing"))
        },
        BadInput(testDescription: "bunch size below 1", expected: .invalidBunchSize) { point, _ in
            try await point.sequence(named: .data)?.setBunchSize(0)
        },
        BadInput(testDescription: "cycle", expected: .dependencyCycle) { point, known in
            let (a, b) = (UUID(), UUID())
            try await point.enqueue([
                CallOperation(id: a, kind: .noop, dependencies: [b, known.id]),
                CallOperation(id: b, kind: .noop, dependencies: [a]),
            ])
        },
        BadInput(testDescription: "unknown dependency", expected: .unknownDependency) { point, _ in
            try await point.enqueue(CallOperation(kind: .noop, dependencies: [UUID()]))
        },
        BadInput(testDescription: "id reused with different content", expected: .conflictingOperation) { point, known in
            var changed = known
            changed.priority += 1
            try await point.enqueue([CallOperation(kind: .noop), changed])
        },
        BadInput(testDescription: "same id twice in one commit with different content", expected: .conflictingOperation)
        {
            point,
            _ in
            let id = UUID()
            try await point.enqueue([CallOperation(id: id, kind: .noop), CallOperation(id: id, kind: .echo)])
        },
        BadInput(testDescription: "cancel of an unknown id", expected: .unknownOperation) { point, _ in
            try await point.cancel(UUID())
        },
        BadInput(testDescription: "hold of an unknown id", expected: .unknownOperation) { point, _ in
            try await point.hold(UUID(), until: point.now)
        },
        BadInput(testDescription: "unknown kind", expected: .unknownKind) { point, _ in
            try await point.enqueue(CallOperation(kind: "unregistered"))
        },
        BadInput(testDescription: "oversized payload", expected: .payloadTooLarge) { point, _ in
            try await point.enqueue(CallOperation(kind: .noop, payload: Data(count: 1025)))
        },
        BadInput(testDescription: "retry policy without attempts", expected: .invalidRetryPolicy) { point, _ in
            try await point.enqueue(CallOperation(kind: .noop, retryPolicy: RetryPolicy(maximumAttempts: 0)))
        },
        BadInput(testDescription: "retry policy with a negative delay", expected: .invalidRetryPolicy) { point, _ in
            try await point.enqueue(CallOperation(kind: .noop, retryPolicy: RetryPolicy(initialDelay: .seconds(-1))))
        },
    ]
}

@Suite("S17 bad input", .timeLimit(.minutes(3)))
struct BadInputTests {
    @Test("S17: bad input is a typed error that leaves state, events and storage as they were", arguments: BadInput.all)
    func badInputChangesNothing(_ input: BadInput) async throws {
        let storage = RecordingStorage()
        let configuration = DataPoint.Configuration(maximumPayloadSize: 1024, shutdownGracePeriod: .zero)
        try await withManualPoint(storage: storage, configuration: configuration) { point, _ in
            try await point.suspend()
            let known = CallOperation(kind: .noop)
            try await point.enqueue(known)
            let recorder = EventRecorder(point)
            let records = storage.records.count
            let metrics = point.metrics()
            let snapshot = point.pipeline.lastSnapshot
            let error = await #expect(throws: RelayError.self) { try await input.apply(point, known) }
            #expect(error?.code == input.expected)
            #expect(error?.message.isEmpty == false)
            #expect(storage.records.count == records)
            #expect(recorder.events.isEmpty)
            #expect(point.metrics() == metrics)
            #expect(point.pipeline.lastSnapshot == snapshot)
            #expect(try await point.status(of: known.id)?.state == .pending(.suspended))
            #expect(await point.sequence(named: .data)?.bunchSize == 1)
        }
    }

    @Test("S17: a commit with several bad operations reports the first of them, in commit order")
    func firstBadOperationWins() async throws {
        let configuration = DataPoint.Configuration(maximumPayloadSize: 1024, shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, _ in
            let known = CallOperation(kind: .noop)
            try await point.enqueue(known)
            var changed = known
            changed.priority += 1
            let oversized = CallOperation(kind: .noop, payload: Data(count: 1025))
            let noAttempts = CallOperation(kind: .noop, retryPolicy: RetryPolicy(maximumAttempts: 0))
            let unknownSequence = CallOperation(kind: .noop, sequenceName: "missing")
            let commits: [(operations: [CallOperation], expected: RelayError.Code, culprit: UUID)] = [
                ([unknownSequence, oversized], .unknownSequence, unknownSequence.id),
                ([oversized, unknownSequence], .payloadTooLarge, oversized.id),
                ([CallOperation(kind: .noop), noAttempts, oversized], .invalidRetryPolicy, noAttempts.id),
                ([changed, oversized], .conflictingOperation, known.id),
                ([oversized, changed], .payloadTooLarge, oversized.id),
            ]
            for commit in commits {
                let error = await #expect(throws: RelayError.self) { try await point.enqueue(commit.operations) }
                #expect(error?.code == commit.expected)
                #expect(error?.operationIDs.first == commit.culprit)
            }
            #expect(point.pipeline.lastSnapshot == 1)
        }
    }

    @Test("S17: a known operation over a lowered payload limit does not let a new oversized one through")
    func loweredLimitStillRejectsNewOperations() async throws {
        try await withTemporaryFolder { folder in
            let restored = CallOperation(kind: .noop, payload: Data(count: 2000))
            let point = try await DataPoint(storage: .file(at: folder.url))
            point.registerBasics()
            try await point.suspend()
            try await point.enqueue(restored)
            try await point.shutdown()

            let lowered = DataPoint.Configuration(maximumPayloadSize: 1024, shutdownGracePeriod: .zero)
            let reopened = try await DataPoint(storage: .file(at: folder.url), configuration: lowered)
            reopened.registerBasics()
            let oversized = CallOperation(kind: .noop, payload: Data(count: 1025))
            let error = await #expect(throws: RelayError.self) { try await reopened.enqueue([restored, oversized]) }
            #expect(error?.code == .payloadTooLarge)
            #expect(error?.operationIDs.first == oversized.id)
            #expect(try await reopened.status(of: oversized.id) == nil)
            try await reopened.shutdown()
        }
    }

    @Test("S17: errors carry a code, a message and the operations involved")
    func errorShape() {
        let id = UUID()
        let error = RelayError(.unknownOperation, "no operation", operationIDs: [id])
        #expect(error.code == .unknownOperation)
        #expect(error.description == "RelayError.unknownOperation: no operation")
        #expect(error.operationIDs == [id])
        #expect(RelayError.Code.dependencyCycle != .unknownDependency)
    }
}
