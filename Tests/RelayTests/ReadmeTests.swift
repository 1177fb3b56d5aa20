import Foundation
import Relay
import Testing

/// Keeps the README's quick start true: this is its code, with prints turned into expectations.
@Suite("README", .timeLimit(.minutes(1)))
struct ReadmeTests {
    @Test("the README's quick start runs as written")
    func quickStart() async throws {
        try await DataPoint.with(storage: .volatile) { point in
            point.register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: "echo")
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 4))
            let events = point.events()  // subscribe before enqueueing

            let fetch = CallOperation(kind: "echo", payload: Data("profile".utf8))
            let upload = CallOperation(kind: "echo", sequenceName: .uploads, dependencies: [fetch.id])
            let handles = try await point.enqueue([fetch, upload])  // one atomic commit

            #expect(String(decoding: try await handles[0].value, as: UTF8.self) == "profile")
            var finished: [UUID] = []
            for await event in events where event.kind.isTerminal {
                finished.append(event.operationID!)
                if event.operationID == upload.id { break }
            }
            #expect(finished == [fetch.id, upload.id])
            #expect(point.metrics().total.completed == 2)
        }
    }
}
