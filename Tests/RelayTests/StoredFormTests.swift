import Foundation
import Relay
import Testing

/// The binary forms of one operation and one result, which a store that keeps a row per operation writes in fields.
@Suite("S26 stored forms of operations and results")
struct StoredFormTests {
    @Test("S26: an operation reads back from its stored form with every field, its snapshot included")
    func operationRoundTrip() throws {
        let dependency = UUID()
        let operation = CallOperation(
            kind: CallKind(rawValue: "webhook"), sequenceName: CallSequence.Name(rawValue: "orders"),
            dependencies: [dependency], priority: 3, payload: Data("{\"order\":7}".utf8),
            persistentUserInfo: ["tenant": "acme"],
            retryPolicy: RetryPolicy(maximumAttempts: 4, initialDelay: .milliseconds(50)),
            onDependencyFailure: .runAnyway, idempotencyKey: "order-7")
        let read = try CallOperation(encoded: operation.encoded())
        #expect(read == operation)
        #expect(read.idempotencyKey == "order-7")
        #expect(read.dependencies == [dependency])
        #expect(read.retryPolicy.maximumAttempts == 4)
    }

    @Test("S26: every terminal state reads back from its stored form")
    func resultRoundTrip() throws {
        let failure = CallFailure(reason: "HTTP 422", attempts: 2, cause: .executorFailed)
        let results: [CallResult] = [
            .completed(Data([1, 2, 3])), .skipped, .failed(failure), .cancelled(.requested),
            .cancelled(.dependencyFailed(UUID())), .cancelled(.dependencyCancelled(UUID())),
        ]
        for result in results { #expect(try CallResult(encoded: result.encoded()) == result) }
    }

    @Test("S17: bytes that are not one whole operation or result are a typed error")
    func damagedForms() throws {
        let encoded = CallOperation(kind: CallKind(rawValue: "webhook")).encoded()
        for damaged in [encoded.dropLast(), encoded + Data([0]), Data()] {
            #expect(throws: RelayError.self) { try CallOperation(encoded: Data(damaged)) }
        }
        do {
            _ = try CallResult(encoded: Data([200]))
            Issue.record("a result with an unknown tag was read")
        } catch {
            #expect(error.code == .corruptStore)
        }
    }
}
