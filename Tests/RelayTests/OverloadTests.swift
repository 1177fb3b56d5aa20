import Foundation
import Testing

@testable import Relay

@Suite("S34 a bound on pending operations", .timeLimit(.minutes(3)))
struct OverloadTests {
    @Test("S34: past maximumPending, a commit fails at once with overloaded and changes nothing; finishing frees room")
    func boundOnOperations() async throws {
        try await withTemporaryFolder { folder in
            let configuration = DataPoint.Configuration(maximumPending: 3)
            let point = try await DataPoint(storage: .file(at: folder.url), configuration: configuration)
            point.registerBasics()
            try await point.suspend()
            let first = [CallOperation(kind: .noop), CallOperation(kind: .noop)]
            try await point.enqueue(first)
            let refused = CallOperation(kind: .noop)
            let error = await #expect(throws: RelayError.self) {
                try await point.transaction { tx in
                    try tx.setValue("lost", forKey: "k")
                    tx.enqueue(refused)
                    tx.enqueue(CallOperation(kind: .noop))
                }
            }
            #expect(error?.code == .overloaded)
            #expect(error?.message.contains("maximumPending is 3") == true, "it says which limit is full")
            #expect(try await point.status(of: refused.id) == nil)
            #expect(try point.value(String.self, forKey: "k") == nil, "the transaction's models are not kept")
            // Naming known operations again adds nothing, so it is not refused; a transaction that enqueues
            // nothing never is.
            try await point.enqueue(first)
            try await point.transaction { tx in try tx.setValue("kept", forKey: "k") }
            try await point.enqueue(CallOperation(kind: .noop))

            try await point.cancel(first[0].id)
            let fourth = try await point.enqueue(CallOperation(kind: .noop))
            try await point.shutdown()

            // Restored operations count against the bound.
            let reopened = try await DataPoint(storage: .file(at: folder.url), configuration: configuration)
            reopened.registerBasics()
            #expect(try await reopened.status(of: fourth.id) != nil)
            let again = await #expect(throws: RelayError.self) {
                try await reopened.enqueue(CallOperation(kind: .noop))
            }
            #expect(again?.code == .overloaded)
            try await reopened.shutdown()
        }
    }

    @Test("S34: past maximumPendingBytes of payloads, a commit fails at once with overloaded")
    func boundOnBytes() async throws {
        let configuration = DataPoint.Configuration(maximumPendingBytes: 100)
        try await DataPoint.with(storage: .volatile, configuration: configuration) { point in
            point.registerBasics()
            try await point.suspend()
            let held = try await point.enqueue(CallOperation(kind: .echo, payload: Data(count: 60)))
            let error = await #expect(throws: RelayError.self) {
                try await point.enqueue(CallOperation(kind: .echo, payload: Data(count: 41)))
            }
            #expect(error?.code == .overloaded)
            #expect(error?.message.contains("maximumPendingBytes is 100") == true)
            _ = try await point.enqueue(CallOperation(kind: .echo, payload: Data(count: 40)))
            _ = try await point.resume()
            _ = try await held.value
            _ = try await point.enqueue(CallOperation(kind: .echo, payload: Data(count: 60)))
        }
    }
}
