import Foundation
import Relay
import RelayTesting
import Testing

/// The journal is filled with zeros ahead of its writes, so that a sync writes data rather than a new length each
/// time; these tests check that the zeros are never taken for records, nor for a torn tail, and that a transition torn
/// inside them is cut as a torn tail is.
@Suite("S17 a journal filled ahead with zeros", .timeLimit(.minutes(3)))
struct JournalGrowthTests {
    /// Enqueues `payloads` one commit each, then crashes; returns the journal's bytes.
    private func crashAfterEnqueueing(_ payloads: [Data], in folder: TemporaryFolder) async throws -> Data {
        let point = try await DataPoint(storage: .file(at: folder.url))
        point.registerBasics()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await point.run() }
            for payload in payloads {
                _ = try await point.enqueue(CallOperation(kind: .echo, payload: payload)).outcome
            }
            await point.simulateCrash()
            try await group.waitForAll()
        }
        return try Data(contentsOf: folder.journal)
    }

    @Test("S17: zeros after the frames are no torn tail: a reopen reports nothing, keeps them and writes over them")
    func zerosAfterFramesAreClean() async throws {
        try await withTemporaryFolder { folder in
            let first = try await crashAfterEnqueueing([Data("a".utf8), Data("b".utf8)], in: folder)
            let frames = frameOffsets(in: first)
            #expect(first.count > frames.end)
            #expect(first.count % 4096 == 0)
            #expect(endsInZeros(first, after: frames.end))

            let second = try await crashAfterEnqueueing([Data("c".utf8)], in: folder)
            // The reopen neither cut nor reported anything, and the next frames went where the first ones ended.
            #expect(second.count == first.count)
            #expect(second.prefix(frames.end) == first.prefix(frames.end))
            #expect(frameOffsets(in: second).end > frames.end)

            let storage = FileStorage(at: folder.url)
            let state = try await storage.open()
            #expect(storage.recoveryReport?.tornTailOffset == nil)
            #expect(storage.recoveryReport?.cutSomething == false)
            #expect(state.operations.count == 3)
            #expect(state.operations.allSatisfy { $0.result != nil })
            try await storage.close()
        }
    }

    @Test("S17: a transition torn inside the zeros is cut at its start, at every block it can be torn at")
    func tornInsideTheZeros() async throws {
        try await withTemporaryFolder { source in
            // A last transition of several 512-byte blocks, so that a power loss can keep some of them.
            let large = Data((0..<3000).map { UInt8(truncatingIfNeeded: $0 | 1) })
            let bytes = try await crashAfterEnqueueing([Data("a".utf8), large], in: source)
            let frames = frameOffsets(in: bytes)
            let intact = try FileStorage.inspect(at: source.url).state.operations
            #expect(intact.count == 2)
            let torn = Array(stride(from: (frames.last / 512 + 1) * 512, to: frames.end, by: 512))
            #expect(torn.count >= 4)
            for cut in torn {
                try await withTemporaryFolder { folder in
                    try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                    var damaged = bytes
                    damaged.replaceSubrange(cut..<frames.end, with: Data(count: frames.end - cut))
                    try damaged.write(to: folder.journal)
                    let storage = FileStorage(at: folder.url)
                    let state = try await storage.open()
                    let report = try #require(storage.recoveryReport)
                    #expect(report.tornTailOffset == frames.last, "torn at \(cut)")
                    #expect(!report.tailWasDamaged, "torn at \(cut): zeros from a block boundary are a torn write")
                    // The first operation's commit and completion survive; the large one's completion is cut.
                    #expect(state.operations.count == 2)
                    let cutLength = try FileManager.default.attributesOfItem(atPath: folder.journal.path)[.size] as? Int
                    #expect(cutLength == frames.last)
                    try await storage.close()
                }
            }
        }
    }

    @Test("S17: a flipped bit in the complete last frame before the zeros is damage, not a torn write")
    func damageBeforeTheZeros() async throws {
        try await withTemporaryFolder { folder in
            var bytes = try await crashAfterEnqueueing([Data("a".utf8), Data("b".utf8)], in: folder)
            let frames = frameOffsets(in: bytes)
            bytes[frames.last + 13] ^= 0x01
            try bytes.write(to: folder.journal)
            let storage = FileStorage(at: folder.url)
            _ = try await storage.open()
            let report = try #require(storage.recoveryReport)
            #expect(report.tailWasDamaged)
            #expect(report.tornTailOffset == frames.last)
            #expect(report.truncatedBytes == frames.end - frames.last)
            try await storage.close()
        }
    }
}
