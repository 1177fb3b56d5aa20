import Foundation
import RelayTesting
import Testing

@testable import Relay

/// Damage that a frame's checksum does not catch.
///
/// Headers, generations, missing files, and values that no clock or counter makes: each is a typed error that leaves
/// the files as they were.
@Suite("S17 store damage", .timeLimit(.minutes(2)))
struct StoreDamageTests {
    /// A store with a snapshot (generation 1), and a journal (generation 2) holding transitions after it.
    private func compactedStore(in folder: TemporaryFolder) async throws {
        try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
            point.registerBasics()
            for index in 0..<3 {
                _ = try await point.execute(CallOperation(kind: .echo, payload: Data([UInt8(index)])))
            }
        }
        let point = try await DataPoint(storage: .file(at: folder.url))
        point.registerBasics()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            for index in 0..<3 {
                _ = try await point.enqueue(CallOperation(kind: .echo, payload: Data([UInt8(index)]))).outcome
            }
            await point.simulateCrash()
            try await group.waitForAll()
        }
    }

    private func snapshotURL(_ folder: TemporaryFolder) -> URL { folder.url.appendingPathComponent("snapshot") }

    /// Opening fails with one of `codes`, and neither file changes.
    private func expectRefused(
        _ folder: TemporaryFolder,
        codes: Set<RelayError.Code> = [.corruptStore],
        _ comment: Comment? = nil
    ) async throws {
        let journal = try? Data(contentsOf: folder.journal)
        let snapshot = try? Data(contentsOf: snapshotURL(folder))
        let error = await #expect(throws: RelayError.self, comment) {
            _ = try await FileStorage(at: folder.url).open()
        }
        #expect(error.map { codes.contains($0.code) } == true, comment)
        let journalAfter = try? Data(contentsOf: folder.journal)
        let snapshotAfter = try? Data(contentsOf: snapshotURL(folder))
        #expect(journalAfter == journal, comment)
        #expect(snapshotAfter == snapshot, comment)
    }

    @Test("S17: every flipped bit of either file's header is a typed error, and the files are unchanged")
    func headerBitFlips() async throws {
        try await withTemporaryFolder { source in
            try await compactedStore(in: source)
            for file in ["journal", "snapshot"] {
                let original = try Data(contentsOf: source.url.appendingPathComponent(file))
                for bit in 0..<(journalHeaderSize * 8) {
                    try await withTemporaryFolder { folder in
                        try FileManager.default.copyItem(at: source.url, to: folder.url)
                        var bytes = original
                        bytes[bit / 8] ^= UInt8(1 << (bit % 8))
                        try bytes.write(to: folder.url.appendingPathComponent(file))
                        // A flip that raises the version above this build's reads as a newer store: still refused.
                        try await expectRefused(
                            folder, codes: [.corruptStore, .unsupportedFormat], "\(file) bit \(bit)")
                    }
                }
            }
        }
    }

    @Test("S17: a journal whose generation does not follow the snapshot's is corruptStore", arguments: [0, 3, 7])
    func generationMismatch(generation: UInt64) async throws {
        try await withTemporaryFolder { folder in
            try await compactedStore(in: folder)
            var bytes = try Data(contentsOf: folder.journal)
            bytes.replaceSubrange(0..<journalHeaderSize, with: StoreFormat.emptyJournal(generation: max(generation, 1)))
            if generation == 0 {
                // Generation 0 is never written; its header is damage even with a matching checksum.
                bytes.replaceSubrange(8..<16, with: [UInt8](repeating: 0, count: 8))
                var crc = ByteWriter()
                crc.fixed32(bytes.prefix(16).withUnsafeBytes(CRC32.checksum))
                bytes.replaceSubrange(16..<20, with: crc.bytes)
            }
            try bytes.write(to: folder.journal)
            try await expectRefused(folder)
        }
    }

    @Test("S17: a missing snapshot the journal follows, or a missing journal beside a snapshot, is corruptStore")
    func missingFiles() async throws {
        try await withTemporaryFolder { folder in
            try await compactedStore(in: folder)
            let snapshot = try Data(contentsOf: snapshotURL(folder))
            try FileManager.default.removeItem(at: snapshotURL(folder))
            try await expectRefused(folder)
            try snapshot.write(to: snapshotURL(folder))
            try FileManager.default.removeItem(at: folder.journal)
            try await expectRefused(folder)
        }
    }

    /// A journal of generation 1 holding `records` in one frame, each frame's checksum right.
    private func journal(_ records: [StorageRecord]) -> Data {
        var writer = StoreFormat.header(magic: StoreFormat.journalMagic, generation: 1)
        StoreFormat.appendFrame(records, to: &writer)
        return Data(writer.bytes)
    }

    @Test("S17: a NaN date, a number at the top of its range, and a negative count are corruptStore, never a crash")
    func valuesNoClockMakes() async throws {
        let id = UUID()
        var operation = CallOperation(id: id, kind: .echo)
        operation.snapshot = 1
        let commit = StorageRecord.commit(snapshot: 1, operations: [operation], at: Date())
        let cases: [(String, [StorageRecord])] = [
            (
                "a commit dated NaN",
                [.commit(snapshot: 1, operations: [operation], at: Date(timeIntervalSinceReferenceDate: .nan))]
            ),
            (
                "an attempt dated infinity",
                [commit, .started(id, attempt: 1, at: Date(timeIntervalSinceReferenceDate: .infinity))]
            ),
            ("a snapshot number at the top", [.commit(snapshot: .max, operations: [], at: Date())]),
            ("a negative attempt", [commit, .started(id, attempt: -1, at: Date())]),
            ("an attempt count at the top", [commit, .attemptReturned(id, attempts: .max)]),
        ]
        for (name, records) in cases {
            try await withTemporaryFolder { folder in
                try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                try journal(records).write(to: folder.journal)
                try await expectRefused(folder, Comment(rawValue: name))
            }
        }
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            try Data(StoreFormat.emptyJournal(generation: .max)).write(to: folder.journal)
            try await expectRefused(folder, "a generation at the top")
        }
    }

    @Test("S17: a torn tail keeps all of a transition or none of it: a failure and the cancellation it cascades")
    func tornTransition() async throws {
        try await withTemporaryFolder { source in
            let failing = CallOperation(kind: "fails", retryPolicy: .never)
            let dependent = CallOperation(kind: .echo, dependencies: [failing.id])
            let point = try await DataPoint(storage: .file(at: source.url))
            point.registerBasics()
            point.register(ClosureExecutor { _, _ in .failed(reason: "no") }, for: "fails")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await point.run() }
                let handles = try await point.enqueue([failing, dependent])
                _ = try await handles[1].outcome
                await point.simulateCrash()
                try await group.waitForAll()
            }
            let bytes = try Data(contentsOf: source.journal)
            let frames = frameOffsets(in: bytes)
            for cut in frames.last..<frames.end {
                try await withTemporaryFolder { folder in
                    try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                    try bytes.prefix(cut).write(to: folder.journal)
                    let state = try await FileStorage(at: folder.url).open()
                    let finished = state.operations.filter { $0.result != nil }.map(\.operation.id)
                    #expect(Set(finished) == [] || Set(finished) == [failing.id, dependent.id], "cut at \(cut)")
                }
            }
        }
    }

    @Test("S25: a store of format version 1 opens unchanged, and is rewritten in the current version")
    func versionOneStore() async throws {
        try await withTemporaryFolder { folder in
            let first = CallOperation(kind: .echo)
            let second = CallOperation(kind: .echo, dependencies: [first.id])
            var stored = [first, second]
            for index in stored.indices { stored[index].snapshot = 1 }
            let date = Date()
            let records: [StorageRecord] = [
                .commit(snapshot: 1, operations: stored, at: date),
                .started(first.id, attempt: 1, at: date),
                .finished(first.id, .completed(Data("done".utf8)), at: date),
            ]
            // Version 1: a 16-byte header without a checksum, then one frame per record.
            var writer = ByteWriter()
            writer.bytes.append(contentsOf: StoreFormat.journalMagic)
            writer.fixed32(1)
            writer.fixed64(1)
            for record in records {
                var frame = ByteWriter()
                RecordCodec.encode(record, into: &frame)
                writer.fixed32(UInt32(frame.bytes.count))
                writer.fixed32(~UInt32(frame.bytes.count))
                writer.fixed32(frame.bytes.withUnsafeBytes(CRC32.checksum))
                writer.bytes.append(contentsOf: frame.bytes)
            }
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            try Data(writer.bytes).write(to: folder.journal)

            // Read-only, it is read as it stands and not rewritten.
            #expect(try FileStorage.read(at: folder.url).operations.count == 2)
            #expect(try Data(contentsOf: folder.journal) == Data(writer.bytes))

            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                point.registerBasics()
                #expect(try await point.handle(for: first.id).value == Data("done".utf8))
                _ = try await point.handle(for: second.id).value
            }
            let journal = try Data(contentsOf: folder.journal)
            #expect(journal.littleEndianInteger(at: 4, bytes: 4) == Int(StoreFormat.version))
            #expect(
                try Data(contentsOf: snapshotURL(folder)).littleEndianInteger(at: 4, bytes: 4)
                    == Int(StoreFormat.version))
        }
    }
}
