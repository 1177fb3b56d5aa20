import Foundation
import Relay
import RelayTesting
import Testing

@Suite("S17 store integrity", .timeLimit(.minutes(2)))
struct StoreIntegrityTests {
    /// A folder whose journal holds a few records after a simulated crash; returns its frames, without the zeros
    /// written ahead of them (as a journal of an earlier version ends), and where its last record starts.
    private func journalAfterCrash(in folder: TemporaryFolder) async throws -> (bytes: Data, lastRecord: Int) {
        let point = try await DataPoint(storage: .file(at: folder.url))
        point.registerBasics()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            for index in 0..<3 {
                let handle = try await point.enqueue(CallOperation(kind: .echo, payload: Data("record \(index)".utf8)))
                _ = try await handle.outcome
            }
            await point.simulateCrash()
            try await group.waitForAll()
        }
        let bytes = try Data(contentsOf: folder.journal)
        let frames = frameOffsets(in: bytes)
        #expect(endsInZeros(bytes, after: frames.end))
        return (bytes.prefix(frames.end), frames.last)
    }

    @Test("S17: a journal torn at every byte offset of its last record is truncated there and reported")
    func tornTail() async throws {
        try await withTemporaryFolder { source in
            let (bytes, lastRecord) = try await journalAfterCrash(in: source)
            let intact = try FileStorage.inspect(at: source.url).state.operations.count
            for cut in lastRecord..<bytes.count {
                try await withTemporaryFolder { folder in
                    try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                    try bytes.prefix(cut).write(to: folder.journal)
                    let storage = FileStorage(at: folder.url)
                    let state = try await storage.open()
                    let report = try #require(storage.recoveryReport)
                    if cut == lastRecord {
                        #expect(report.tornTailOffset == nil)
                    } else {
                        #expect(report.tornTailOffset == lastRecord, "cut at \(cut)")
                        #expect(report.truncatedBytes == cut - lastRecord)
                        #expect(!report.tailWasDamaged, "a frame cut short is a torn write")
                    }
                    #expect(state.operations.count == intact)
                    let truncated = try FileManager.default.attributesOfItem(atPath: folder.journal.path)[.size] as? Int
                    #expect(truncated == lastRecord)
                    try await storage.close()
                }
            }
        }
    }

    @Test("S17: a bit flipped in the complete last frame is reported as damage, with where and what it lost")
    func damagedLastFrame() async throws {
        try await withTemporaryFolder { source in
            let (bytes, lastRecord) = try await journalAfterCrash(in: source)
            let intact = try FileStorage.inspect(at: source.url).state.operations.count
            for position in stride(from: lastRecord + 12, to: bytes.count, by: 7) {
                try await withTemporaryFolder { folder in
                    try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                    var damaged = bytes
                    damaged[position] ^= 0x04
                    try damaged.write(to: folder.journal)
                    let storage = FileStorage(at: folder.url)
                    let state = try await storage.open()
                    let report = try #require(storage.recoveryReport)
                    #expect(report.tailWasDamaged, "byte \(position)")
                    #expect(report.tornTailOffset == lastRecord)
                    #expect(report.truncatedBytes == bytes.count - lastRecord)
                    #expect(report.description.contains("was damaged"), "\(report)")
                    #expect(report.description.contains("at byte \(lastRecord)"), "\(report)")
                    #expect(state.operations.count == intact)
                    try await storage.close()
                }
            }
        }
    }

    @Test(
        "S17: a flipped bit in the middle of the journal is corruptStore with its offset, and the files are unchanged")
    func corruptionInTheMiddle() async throws {
        try await withTemporaryFolder { folder in
            var (bytes, _) = try await journalAfterCrash(in: folder)
            bytes[journalHeaderSize + 12 + 3] ^= 0x10
            try bytes.write(to: folder.journal)
            let error = await #expect(throws: RelayError.self) {
                _ = try await DataPoint(storage: .file(at: folder.url))
            }
            #expect(error?.code == .corruptStore)
            #expect(error?.offset == journalHeaderSize)
            #expect(try Data(contentsOf: folder.journal) == bytes)
        }
    }

    @Test("S17: a store written by a newer format version is a clear error")
    func newerVersion() async throws {
        try await withTemporaryFolder { folder in
            var (bytes, _) = try await journalAfterCrash(in: folder)
            bytes[4] = 99
            try bytes.write(to: folder.journal)
            let error = await #expect(throws: RelayError.self) {
                _ = try await DataPoint(storage: .file(at: folder.url))
            }
            #expect(error?.code == .unsupportedFormat)
            #expect(error?.message.contains("99") == true)
        }
    }

    @Test("S18: a store folder is made with its missing parents, mode 0700; a file in its place is a typed error")
    func missingParents() async throws {
        try await withTemporaryFolder { folder in
            let store = folder.url.appendingPathComponent("a/b/store")
            let point = try await DataPoint(storage: .file(at: store))
            try await point.shutdown()
            let mode = try FileManager.default.attributesOfItem(atPath: store.path)[.posixPermissions] as? Int
            #expect(mode == 0o700)

            let file = folder.url.appendingPathComponent("a/file")
            try Data("x".utf8).write(to: file)
            let error = await #expect(throws: RelayError.self) { _ = try await DataPoint(storage: .file(at: file)) }
            #expect(error?.code == .storageFailure)
            #expect(try Data(contentsOf: file) == Data("x".utf8))
        }
    }

    @Test("S17: a second DataPoint on a folder that is open is refused, and admitted once the first closes")
    func secondOpenInProcess() async throws {
        try await withTemporaryFolder { folder in
            let first = try await DataPoint(storage: .file(at: folder.url))
            let error = await #expect(throws: RelayError.self) {
                _ = try await DataPoint(storage: .file(at: folder.url))
            }
            #expect(error?.code == .storeLocked)
            try await first.shutdown()
            let second = try await DataPoint(storage: .file(at: folder.url))
            try await second.shutdown()
        }
    }

    @Test("S17: every header, journal frame and snapshot carries the standard CRC-32 of its bytes")
    func standardChecksums() async throws {
        try await withTemporaryFolder { folder in
            let (journal, _) = try await journalAfterCrash(in: folder)
            #expect(journal.littleEndianInteger(at: 16, bytes: 4) == referenceCRC32(journal[0..<16]))
            var offset = journalHeaderSize
            var records = 0
            while offset < journal.count {
                let length = journal.littleEndianInteger(at: offset, bytes: 4)
                let payload = journal[offset + 12..<offset + 12 + length]
                #expect(journal.littleEndianInteger(at: offset + 8, bytes: 4) == referenceCRC32(payload))
                offset += 12 + length
                records += 1
            }
            #expect(records > 0)

            let point = try await DataPoint(storage: .file(at: folder.url))
            try await point.shutdown()
            let snapshot = try Data(contentsOf: folder.url.appendingPathComponent("snapshot"))
            #expect(snapshot.littleEndianInteger(at: 16, bytes: 4) == referenceCRC32(snapshot[0..<16]))
            let length = snapshot.littleEndianInteger(at: 20, bytes: 8)
            #expect(snapshot.count == 32 + length)
            #expect(snapshot.littleEndianInteger(at: 28, bytes: 4) == referenceCRC32(snapshot[32...]))
        }
    }

}

/// The size of a store file's header in the current format: magic, version, generation and the header's CRC-32.
let journalHeaderSize = 20

/// Where a journal's last frame starts, and where its frames end: at the zeros the journal is filled with ahead of its
/// writes, or at the end of the file.
func frameOffsets(in journal: Data) -> (last: Int, end: Int) {
    var offset = journalHeaderSize
    var last = offset
    while offset + 12 <= journal.count, journal.littleEndianInteger(at: offset, bytes: 12) != 0 {
        last = offset
        offset += 12 + journal.littleEndianInteger(at: offset, bytes: 4)
    }
    return (last, offset)
}

/// Whether the journal holds nothing but zeros after its frames.
func endsInZeros(_ journal: Data, after frames: Int) -> Bool {
    journal[(journal.startIndex + frames)...].allSatisfy { $0 == 0 }
}

/// CRC-32 a bit at a time, straight from its definition, to check the store's table-driven one against.
func referenceCRC32(_ bytes: Data) -> Int {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return Int(~crc)
}

extension Data {
    /// The unsigned little-endian integer of `bytes` bytes at `offset` from the start.
    func littleEndianInteger(at offset: Int, bytes: Int) -> Int {
        (0..<bytes).reduce(0) { $0 | Int(self[startIndex + offset + $1]) << (8 * $1) }
    }
}
