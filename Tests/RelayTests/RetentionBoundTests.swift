import Foundation
import Relay
import RelayTesting
import Testing

/// S16's bounds on retained outcomes: however long the window, a DataPoint keeps at most so many finished operations,
/// and so many bytes of them, in memory, and its store keeps the same ones.
@Suite("S16 retention bounds", .timeLimit(.minutes(3)))
struct RetentionBoundTests {
    /// Runs `operations` one after another, each finished before the next is enqueued.
    private func runInTurn(_ operations: [CallOperation], on point: DataPoint) async throws {
        for operation in operations { _ = try await point.execute(operation) }
    }

    private func isKnown(_ id: UUID, to point: DataPoint) async -> Bool {
        (try? await point.handle(for: id)) != nil
    }

    @Test("S16: past maximumRetained, the oldest finished operations go before their window; the store keeps the rest")
    func countBound() async throws {
        try await withTemporaryFolder { folder in
            let operations = (0..<6).map { index in CallOperation(kind: .echo, payload: Data("\(index)".utf8)) }
            let three = DataPoint.Configuration(maximumRetained: 3, shutdownGracePeriod: .zero)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: three) { point in
                point.registerBasics()
                try await runInTurn(operations, on: point)
                // The two oldest were forgotten before later commits, which let their ids go.
                #expect(await !isKnown(operations[0].id, to: point))
                #expect(await !isKnown(operations[1].id, to: point))
                for operation in operations.suffix(3) {
                    let value = try await point.handle(for: operation.id).value
                    #expect(value == operation.payload)
                }
            }
            // A wider bound after the restart brings nothing back: the store dropped what the DataPoint dropped.
            let wide = DataPoint.Configuration(maximumRetained: 100, shutdownGracePeriod: .zero)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: wide) { point in
                for operation in operations.prefix(3) { #expect(await !isKnown(operation.id, to: point)) }
                for operation in operations.suffix(3) {
                    let value = try await point.handle(for: operation.id).value
                    #expect(value == operation.payload)
                }
            }
        }
    }

    @Test("S16: past maximumRetainedBytes, the oldest finished operations go, counted by payload and result")
    func byteBound() async throws {
        try await withTemporaryFolder { folder in
            let payload = Data(repeating: 7, count: 1_000)
            let operations = (0..<5).map { _ in CallOperation(kind: .echo, payload: payload) }
            let each = RetentionPolicy.retainedSize(payload: payload.count, result: .completed(payload))
            #expect(each == 2_512)
            let two = DataPoint.Configuration(maximumRetainedBytes: 2 * each + 100, shutdownGracePeriod: .zero)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: two) { point in
                point.registerBasics()
                try await runInTurn(operations, on: point)
                for operation in operations.prefix(2) { #expect(await !isKnown(operation.id, to: point)) }
                for operation in operations.suffix(2) { #expect(await isKnown(operation.id, to: point)) }
            }
            let state = try FileStorage.read(at: folder.url)
            #expect(state.operations.map(\.operation.id) == operations.suffix(2).map(\.id))
        }
    }
}
