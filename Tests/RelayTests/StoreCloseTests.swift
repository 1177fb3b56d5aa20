import Foundation
import Testing

@testable import Relay

/// A store whose close fails: the failure reaches whoever stops the DataPoint, and nothing acknowledged is lost.
///
/// The close of a file store folds its journal into a new snapshot, written beside the old one as `snapshot.new`; a
/// folder in that place makes the write fail, as a full or read-only disk would.
@Suite("S15 a store that fails to close", .timeLimit(.minutes(3)))
struct StoreCloseTests {
    private static func blockSnapshot(in folder: URL) throws {
        let blocker = folder.appendingPathComponent("snapshot.new")
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
        try Data("x".utf8).write(to: blocker.appendingPathComponent("keep"))
    }

    private static func unblockSnapshot(in folder: URL) throws {
        try FileManager.default.removeItem(at: folder.appendingPathComponent("snapshot.new"))
    }

    @Test("S15: shutdown() throws when the store fails to close, and what was acknowledged opens again")
    func shutdownThrows() async throws {
        try await withTemporaryFolder { folder in
            let operation = CallOperation(kind: .noop)
            let point = try await DataPoint(storage: .file(at: folder.url))
            point.registerBasics()
            try await point.suspend()
            try await point.enqueue(operation)
            try Self.blockSnapshot(in: folder.url)
            let error = await #expect(throws: RelayError.self) { try await point.shutdown() }
            #expect(error?.code == .storageFailure)
            let again = await #expect(throws: RelayError.self) { try await point.shutdown() }
            #expect(again?.code == .storageFailure, "a later shutdown reports it too")

            try Self.unblockSnapshot(in: folder.url)
            let reopened = try await DataPoint(storage: .file(at: folder.url))
            reopened.registerBasics()
            #expect(try await reopened.status(of: operation.id)?.state == .pending(.suspended))
            try await reopened.shutdown()
        }
    }

    @Test("S15: run() and DataPoint.with throw when the store fails to close")
    func runThrows() async throws {
        try await withTemporaryFolder { folder in
            let point = try await DataPoint(storage: .file(at: folder.url))
            point.registerBasics()
            let engine = Task { try await point.run() }
            let handle = try await point.enqueue(CallOperation(kind: .noop))
            _ = try await handle.value
            try Self.blockSnapshot(in: folder.url)
            point.beginShutdown()
            let error = await #expect(throws: RelayError.self) { try await engine.value }
            #expect(error?.code == .storageFailure)
            try Self.unblockSnapshot(in: folder.url)

            let scoped = await #expect(throws: RelayError.self) {
                try await DataPoint.with(storage: .file(at: folder.url)) { point in
                    try await point.transaction { try $0.setValue("v", forKey: "k") }
                    try Self.blockSnapshot(in: folder.url)
                }
            }
            #expect(scoped?.code == .storageFailure)
            try Self.unblockSnapshot(in: folder.url)
            let kept = try await DataPoint.with(storage: .file(at: folder.url)) { point in
                try point.value(String.self, forKey: "k")
            }
            #expect(kept == "v")
        }
    }
}
