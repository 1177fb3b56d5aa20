import Foundation
import RelayTesting
import Testing

@testable import Relay

/// Compaction beside writes: a journal past its threshold is sealed, the next one starts, and the sealed one is folded
/// into the snapshot while acknowledgements go on; a crash at any point loses nothing acknowledged.
@Suite("S16/S17 compaction beside writes", .timeLimit(.minutes(3)))
struct CompactionTests {
    private let small = FileStorage.Options(compactionThreshold: 2_048)

    private func sealedJournal(in folder: TemporaryFolder) -> URL {
        folder.url.appendingPathComponent("journal.sealed")
    }

    @Test("S16: a running DataPoint folds sealed journals beside its writes, and nothing is lost")
    func foldsBesideWrites() async throws {
        try await withTemporaryFolder { folder in
            let storage = FileStorage(at: folder.url, options: small)
            let operations = (0..<300).map { index in CallOperation(kind: .echo, payload: Data("\(index)".utf8)) }
            try await DataPoint.with(storage: storage, configuration: testConfiguration) { point in
                point.registerBasics()
                for operation in operations { _ = try await point.execute(operation) }
            }
            #expect(storage.foldsBesideWrites > 0)
            #expect(!FileManager.default.fileExists(atPath: sealedJournal(in: folder).path))
            let state = try FileStorage.read(at: folder.url)
            #expect(state.operations.map(\.operation.id) == operations.map(\.id))
            #expect(state.operations.allSatisfy { $0.result != nil })
        }
    }

    /// Enqueues on a DataPoint that does not run, so that no fold comes, until a sealed journal waits; then crashes.
    private func crashWithSealedJournal(in folder: TemporaryFolder) async throws -> [CallOperation] {
        let point = try await DataPoint(storage: FileStorage(at: folder.url, options: small))
        point.registerBasics()
        var operations: [CallOperation] = []
        while !FileManager.default.fileExists(atPath: sealedJournal(in: folder).path) || operations.count % 10 != 0 {
            let operation = CallOperation(kind: .echo, payload: Data("\(operations.count)".utf8))
            try await point.enqueue(operation)
            operations.append(operation)
        }
        await point.simulateCrash()
        return operations
    }

    @Test("S17: a crash while a sealed journal waits for its fold loses nothing; the reopen folds it")
    func crashBeforeTheFold() async throws {
        try await withTemporaryFolder { folder in
            let operations = try await crashWithSealedJournal(in: folder)
            let reopened = try await DataPoint(storage: .file(at: folder.url))
            #expect(reopened.recoveryReport?.operationsRecovered == operations.count)
            #expect(!FileManager.default.fileExists(atPath: sealedJournal(in: folder).path))
            try await reopened.shutdown()
            #expect(try FileStorage.read(at: folder.url).operations.map(\.operation.id) == operations.map(\.id))
        }
    }

    @Test("S17: a crash after the fold wrote its snapshot, before it removed the sealed journal, replays nothing twice")
    func crashAfterTheFold() async throws {
        try await withTemporaryFolder { folder in
            let operations = try await crashWithSealedJournal(in: folder)
            // What the fold does, short of removing the sealed journal.
            let paths = FileStorage.Paths(folder: folder.url.path)
            let folded = try FileStorage.fold(paths, retention: RetentionPolicy(), scope: .sealedOnly)
            try POSIXFile.replace(
                paths.snapshot, with: StoreFormat.snapshot(folded.state, generation: folded.generation),
                folder: paths.folder)
            let (state, duplicates) = try FileStorage.inspect(at: folder.url)
            #expect(duplicates == 0)
            #expect(state.operations.map(\.operation.id) == operations.map(\.id))
            let reopened = try await DataPoint(storage: .file(at: folder.url))
            #expect(reopened.recoveryReport?.operationsRecovered == operations.count)
            try await reopened.shutdown()
        }
    }

    @Test("S17: a store whose journal is missing beside a sealed one opens from the snapshot and the sealed journal")
    func crashWhileSealing() async throws {
        try await withTemporaryFolder { folder in
            let operations = try await crashWithSealedJournal(in: folder)
            // As if the crash came after the journal was set aside and before the next one was made.
            try FileManager.default.removeItem(at: folder.url.appendingPathComponent("journal"))
            let reopened = try await DataPoint(storage: .file(at: folder.url))
            let recovered = try #require(reopened.recoveryReport?.operationsRecovered)
            #expect(recovered > 0 && recovered <= operations.count)
            try await reopened.shutdown()
            let ids = try FileStorage.read(at: folder.url).operations.map(\.operation.id)
            #expect(ids == Array(operations.prefix(recovered).map(\.id)))
        }
    }

    @Test("S16: a send that got no answer is kept beside the attempts, in the journal and in a snapshot")
    func unansweredSendsAreKept() throws {
        let operation = CallOperation(kind: .echo)
        let records: [StorageRecord] = [
            .commit(snapshot: 1, operations: [operation], at: Date(timeIntervalSince1970: 0)),
            .started(operation.id, attempt: 1, at: Date(timeIntervalSince1970: 1)),
            .attemptReturned(operation.id, attempts: 0, sent: true),
            .started(operation.id, attempt: 1, at: Date(timeIntervalSince1970: 2)),
            .attemptReturned(operation.id, attempts: 0, sent: false),
        ]
        var replay = StoredState.Replay()
        for record in records {
            var writer = ByteWriter()
            RecordCodec.encode(record, into: &writer)
            let decoded = try writer.bytes.withUnsafeBytes { bytes in
                var reader = ByteReader(bytes)
                return try RecordCodec.decodeRecord(from: &reader)
            }
            #expect(decoded.change == record.change)
            replay.apply(decoded)
        }
        var state = replay.state()
        // One send got no answer; the batch's give-back sent nothing.
        #expect(state.operations.first?.unansweredSends == 1)
        for failure in [nil, CallFailure(reason: "down", attempts: 1)] {
            state.operations[0].lastFailure = failure
            var writer = ByteWriter()
            RecordCodec.encode(state, into: &writer)
            let decoded = try writer.bytes.withUnsafeBytes { bytes in
                var reader = ByteReader(bytes)
                return try RecordCodec.decodeState(from: &reader)
            }
            #expect(decoded.operations.first?.unansweredSends == 1)
            #expect(decoded.operations.first?.lastFailure == failure)
        }
    }
}
