import Foundation
import RelayTesting
import Testing

@testable import Relay

@Suite("S12 handles and memory", .timeLimit(.minutes(3)))
struct HandleMemoryTests {
    @Test("S12: a live handle keeps its own outcome and no other operation's, even of the same commit")
    func handlesOwnTheirOutcomeAlone() async throws {
        let configuration = DataPoint.Configuration(retention: .zero, shutdownGracePeriod: .zero)
        try await withManualPoint(configuration: configuration) { point, _ in
            let operations = (0..<3).map { CallOperation(kind: .echo, payload: Data([UInt8($0)])) }
            var handles = try await point.enqueue(operations)
            let kept = handles[0]
            weak let other = handles[1].record
            for handle in handles { _ = try await handle.value }
            handles.removeAll()
            // A commit lets go of what workers forgot since the last one.
            _ = try await point.execute(CallOperation(kind: .noop))
            #expect(other == nil)
            #expect(try await kept.value == Data([0]))
        }
    }
}
