import Foundation
import Relay
import RelayTesting
import Testing

@Suite struct SmokeTests {
    @Test("a DataPoint executes one operation")
    func executesOne() async throws {
        let data = try await DataPoint.with { point in
            point.register(ClosureExecutor { operation, _ in .completed(operation.payload) }, for: "echo")
            return try await point.execute(CallOperation(kind: "echo", payload: Data("hi".utf8)))
        }
        #expect(String(decoding: data, as: UTF8.self) == "hi")
    }

    @Test("many operations complete at bunch 64")
    func many() async throws {
        try await DataPoint.with { point in
            point.register(ClosureExecutor { _, _ in .completed(Data()) }, for: "noop")
            try await point.upsertCallSequence(CallSequence(name: .data, bunchSize: 64))
            let handles = try await point.enqueue((0..<10_000).map { _ in CallOperation(kind: "noop") })
            for handle in handles { _ = try await handle.value }
            #expect(point.metrics().total.completed == 10_000)
        }
    }
}
