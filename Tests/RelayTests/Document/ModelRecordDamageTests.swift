import Foundation
import RelayTesting
import Testing

@testable import Relay

/// Model records that pass their frame's checksum and still make no sense.
@Suite("S25 damaged model records", .timeLimit(.minutes(3)))
struct ModelRecordDamageTests {
    /// A journal of generation 1 with one frame holding `payload` as written, its checksum right.
    private func journal(framing payload: [UInt8]) -> Data {
        var writer = StoreFormat.header(magic: StoreFormat.journalMagic, generation: 1)
        let length = UInt32(payload.count)
        writer.fixed32(length)
        writer.fixed32(~length)
        writer.fixed32(payload.withUnsafeBytes(CRC32.checksum))
        writer.bytes.append(contentsOf: payload)
        return Data(writer.bytes)
    }

    /// The payload of a frame of one record.
    private func payload(_ record: StorageRecord) -> [UInt8] {
        var writer = ByteWriter()
        writer.varint(1)
        RecordCodec.encode(record, into: &writer)
        return writer.bytes
    }

    @Test("S25: a model record cut short, or claiming more changes or bytes than it holds, is corruptStore")
    func malformedModelRecords() async throws {
        let record = StorageRecord(
            .models(
                snapshot: 1,
                changes: [
                    ModelChange(collection: "orders", id: "1", encoded: Data(#"{"id":1}"#.utf8)),
                    ModelChange(collection: "orders", id: "2", encoded: nil),
                ],
                at: Date(timeIntervalSinceReferenceDate: 0)))
        let whole = payload(record)
        var cases: [(String, [UInt8])] = []
        // Cut at every byte after the frame's record count: each prefix is a record that ends too soon.
        for end in 2..<whole.count { cases.append(("cut at \(end) of \(whole.count)", Array(whole[..<end]))) }
        // The encoded model's length, raised past the end of the record: a one-byte length just before its bytes.
        let model = Array(#"{"id":1}"#.utf8)
        let modelStart = try #require(
            (0...(whole.count - model.count)).first { Array(whole[$0..<($0 + model.count)]) == model })
        #expect(whole[modelStart - 1] == UInt8(model.count))
        var longBlob = whole
        longBlob[modelStart - 1] = 0x7F
        cases.append(("a blob longer than the record", longBlob))
        for (name, bytes) in cases {
            try await withTemporaryFolder { folder in
                try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
                let written = journal(framing: bytes)
                try written.write(to: folder.journal)
                let error = await #expect(throws: RelayError.self, Comment(rawValue: name)) {
                    _ = try await DataPoint(storage: .file(at: folder.url), configuration: testConfiguration)
                }
                #expect(error?.code == .corruptStore, Comment(rawValue: name))
                #expect(try Data(contentsOf: folder.journal) == written, Comment(rawValue: name))
            }
        }
        // The same record, whole, opens: the damage above is what was refused.
        try await withTemporaryFolder { folder in
            try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
            try journal(framing: whole).write(to: folder.journal)
            try await DataPoint.with(storage: .file(at: folder.url), configuration: testConfiguration) { point in
                try point.register(Ticket.self, as: "orders")
                #expect(try point.model(Ticket.self, id: 1)?.id == 1)
                #expect(try point.count(of: Ticket.self) == 1)
            }
        }
    }
}

private struct Ticket: Model {
    let id: Int
}
