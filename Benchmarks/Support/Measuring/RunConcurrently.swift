/// Runs `body` `count` times in a task group, at most `width` at once: the baselines' way of sending requests.
///
/// - Parameters:
///   - count: How many times to run `body`.
///   - width: How many may run at once.
///   - body: One unit of work.
/// - Throws: The first error `body` throws.
public func runConcurrently(
    _ count: Int, width: Int, _ body: @escaping @Sendable () async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var running = 0
        for _ in 0..<count {
            if running == width {
                try await group.next()
                running -= 1
            }
            group.addTask { try await body() }
            running += 1
        }
        try await group.waitForAll()
    }
}
