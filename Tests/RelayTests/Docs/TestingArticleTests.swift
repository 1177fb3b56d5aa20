import Foundation
import Relay
import RelayTesting
import Testing

// The code of the "Testing with Relay" article, as it reads there; the test it shows runs with the suite.

/// Asks for a retry ten seconds after its first attempt, then completes.
struct FlakyExecutor: CallExecutor {
    func execute(_ operation: CallOperation, context: CallContext) async throws -> CallOutcome {
        context.attempt == 1 ? .retry(after: .seconds(10), reason: "busy") : .completed(Data())
    }
}

@Test func retriesAfterTheDelay() async throws {
    try await DataPoint.testing { point, clock in
        point.register(FlakyExecutor(), for: "flaky")
        let handle = try await point.enqueue(CallOperation(kind: "flaky"))
        try await point.idle()  // the first attempt failed and its retry waits for the clock
        clock.advance(by: .seconds(10))
        #expect(try await handle.outcome == .completed(Data()))
    }
}
