import Foundation
import RelayTesting
import Testing

@testable import Relay

/// Reading a store without opening it: for tools that inspect a store a running process holds.
@Suite("S17 read-only store reads", .timeLimit(.minutes(3)))
struct StoreReadTests {
    private func files(in folder: TemporaryFolder) -> [String: Data] {
        var contents: [String: Data] = [:]
        for name in ["journal", "snapshot", "lock"] {
            contents[name] = try? Data(contentsOf: folder.url.appendingPathComponent(name))
        }
        return contents
    }

    @Test("S17: a store that a running DataPoint holds reads as it stands, and no file changes")
    func readsAHeldStore() async throws {
        try await withTemporaryFolder { folder in
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                point.registerBasics()
                let done = try await point.execute(CallOperation(kind: .echo, payload: Data("done".utf8)))
                #expect(done == Data("done".utf8))
                try await point.suspend()
                let waiting = try await point.enqueue(CallOperation(kind: .noop))

                let before = files(in: folder)
                let state = try FileStorage.read(at: folder.url)
                #expect(files(in: folder) == before)
                #expect(state.operations.count == 2)
                let pending = state.operations.filter { $0.result == nil }.map(\.operation.id)
                #expect(pending == [waiting.id])
                #expect(state.suspensionCount == 1)
                // The folder is still the running DataPoint's.
                let error = await #expect(throws: RelayError.self) {
                    _ = try await FileStorage(at: folder.url).open()
                }
                #expect(error?.code == .storeLocked)
                try await point.resume()
                _ = try await waiting.outcome
            }
        }
    }

    @Test("S17: a torn tail is reported and left in place; the next open truncates it")
    func tornTailIsLeftInPlace() async throws {
        try await withTemporaryFolder { folder in
            let point = try await DataPoint(storage: .file(at: folder.url))
            point.registerBasics()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await point.run() }
                _ = try await point.enqueue(CallOperation(kind: .noop)).outcome
                await point.simulateCrash()
                try await group.waitForAll()
            }
            let written = try Data(contentsOf: folder.journal)
            let intact = written.prefix(frameOffsets(in: written).end)
            try (intact + Data([7, 0, 0, 0, 1, 2])).write(to: folder.journal)
            let before = files(in: folder)

            let state = try FileStorage.read(at: folder.url)
            #expect(state.recovery?.tornTailOffset == intact.count)
            #expect(state.operations.count == 1)
            #expect(files(in: folder) == before)

            _ = try await FileStorage(at: folder.url).open()
            #expect(try Data(contentsOf: folder.journal) == intact)
        }
    }

    @Test("S17: a damaged store is a typed error, as when it opens")
    func damagedStoreIsRefused() async throws {
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            try Data("not a journal at all, just text".utf8).write(to: folder.journal)
            let error = #expect(throws: RelayError.self) { try FileStorage.read(at: folder.url) }
            #expect(error?.code == .corruptStore || error?.code == .unsupportedFormat)
        }
    }
}
