import Foundation

/// The on-disk format of a file store.
///
/// A folder holds `snapshot` (the folded state), `journal` (the transitions since that snapshot) and `lock`. Both data
/// files start with a header: a 4-byte magic, a little-endian `UInt32` format version, a `UInt64` generation and, from
/// version 2, a CRC-32 of those 16 bytes. A snapshot's generation is the last journal generation it has folded in. The
/// journal's generation is the snapshot's plus one, or equal to it when a compaction stopped after writing the snapshot
/// and before starting the new journal: that journal is folded in already, and is ignored. A sealed journal
/// (`journal.sealed`, set aside for a fold beside writes) sits between them: the snapshot's generation plus one, the
/// journal's minus one; at or below the snapshot's, it was folded in already. Any other combination is damage.
///
/// A journal frame is its payload's length (`UInt32`), the length's complement (`UInt32`), a CRC-32 of the payload
/// (`UInt32`), then the payload. From version 2, a frame holds every record of one transition (a count, then the
/// records), so a torn tail keeps all of a transition or none of it; a version 1 frame holds one record. A snapshot's
/// body follows its header as its length (`UInt64`), a CRC-32, then the body.
///
/// Version 3 adds a failure that keeps its last response (a result tag of its own), which version 2 cannot read;
/// version 4 a failure that keeps its cause (another tag), which version 3 cannot read; version 5 a document's models
/// (a record of a transaction's model changes, and the collections after a snapshot's operations); version 6 a record
/// of finished operations purged before their retention passed, a retry record that keeps the failure it follows,
/// and, after a snapshot's collections, the last failures of its operations; version 7 an attempt given back after it
/// sent its request, a terminal state with how long the attempts ran, and, after the last failures, the operations'
/// unanswered sends and run times.
///
/// Stores of an earlier version open unchanged: opening one folds it into a snapshot and journal of this version.
enum StoreFormat {
    /// The version this build writes; it reads every version from 1 up to it.
    static let version: UInt32 = 7
    /// The size of a header of the current version.
    static let headerSize = 20
    static let frameHeaderSize = 12
    static let journalMagic: [UInt8] = Array("RLYJ".utf8)
    static let snapshotMagic: [UInt8] = Array("RLYS".utf8)
    /// Generations above this are damage: a store adds one per compaction, and must be able to add more.
    static let largestGeneration = UInt64(Int64.max)

    /// A file's header, as read.
    struct Header: Sendable, Equatable {
        var version: UInt32
        var generation: UInt64

        /// Where the file's content starts.
        var size: Int { version >= 2 ? StoreFormat.headerSize : 16 }
    }

    static func header(magic: [UInt8], generation: UInt64) -> ByteWriter {
        var writer = ByteWriter()
        writer.bytes.append(contentsOf: magic)
        writer.fixed32(version)
        writer.fixed64(generation)
        writer.fixed32(writer.bytes.withUnsafeBytes(CRC32.checksum))
        return writer
    }

    /// Appends one frame holding every record of one transition.
    ///
    /// The payload is encoded in place after a reserved frame header, which is filled in afterwards, so nothing is
    /// copied twice.
    static func appendFrame(_ records: [StorageRecord], to writer: inout ByteWriter) {
        let start = writer.bytes.count
        writer.bytes.append(contentsOf: repeatElement(0, count: frameHeaderSize))
        writer.varint(UInt64(records.count))
        for record in records { RecordCodec.encode(record, into: &writer) }
        let payloadStart = start + frameHeaderSize
        let length = UInt32(writer.bytes.count - payloadStart)
        writer.bytes.withUnsafeMutableBytes { bytes in
            let checksum = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[payloadStart...]))
            bytes.storeBytes(of: length.littleEndian, toByteOffset: start, as: UInt32.self)
            bytes.storeBytes(of: (~length).littleEndian, toByteOffset: start + 4, as: UInt32.self)
            bytes.storeBytes(of: checksum.littleEndian, toByteOffset: start + 8, as: UInt32.self)
        }
    }

    static func snapshot(_ state: StoredState, generation: UInt64) -> [UInt8] {
        var body = ByteWriter()
        RecordCodec.encode(state, into: &body)
        var file = header(magic: snapshotMagic, generation: generation)
        file.fixed64(UInt64(body.bytes.count))
        file.fixed32(body.bytes.withUnsafeBytes(CRC32.checksum))
        file.bytes.append(contentsOf: body.bytes)
        return file.bytes
    }

    static func emptyJournal(generation: UInt64) -> [UInt8] {
        header(magic: journalMagic, generation: generation).bytes
    }

    static func corrupt(_ file: String, at offset: Int, _ what: String) -> RelayError {
        RelayError(.corruptStore, "\(file) is corrupt at byte \(offset): \(what)", offset: offset)
    }

    /// Reads and checks a header.
    static func readHeader(
        _ bytes: UnsafeRawBufferPointer,
        magic: [UInt8],
        file: String
    ) throws(RelayError) -> Header {
        guard bytes.count >= 16 else { throw corrupt(file, at: 0, "the header is incomplete") }
        guard Array(bytes[0..<4]) == magic else { throw corrupt(file, at: 0, "it is not a Relay store file") }
        var reader = ByteReader(bytes, offset: 4)
        guard let version = try? reader.fixed32(), let generation = try? reader.fixed64() else {
            throw corrupt(file, at: 4, "the header is incomplete")
        }
        guard version <= Self.version else {
            throw RelayError(
                .unsupportedFormat,
                "\(file) has format version \(version); this build of Relay reads versions up to \(Self.version)"
            )
        }
        guard version >= 1 else { throw corrupt(file, at: 4, "format version 0 does not exist") }
        let header = Header(version: version, generation: generation)
        if version >= 2 {
            guard bytes.count >= header.size, let checksum = try? reader.fixed32() else {
                throw corrupt(file, at: 16, "the header is incomplete")
            }
            guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<16])) == checksum else {
                throw corrupt(file, at: 0, "the header's checksum does not match")
            }
        }
        guard generation >= 1, generation <= largestGeneration else {
            throw corrupt(file, at: 8, "generation \(generation) is out of range")
        }
        return header
    }

    static func readSnapshot(_ bytes: UnsafeRawBufferPointer, file: String) throws(RelayError) -> (
        state: StoredState, header: Header
    ) {
        let header = try readHeader(bytes, magic: snapshotMagic, file: file)
        var reader = ByteReader(bytes, offset: header.size)
        guard let length = try? reader.fixed64(), let checksum = try? reader.fixed32(),
            length <= UInt64(reader.remaining)
        else { throw corrupt(file, at: header.size, "the body's length is wrong") }
        let body = UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + Int(length)])
        guard CRC32.checksum(body) == checksum else { throw corrupt(file, at: reader.offset, "checksum mismatch") }
        var bodyReader = ByteReader(body)
        guard let state = try? RecordCodec.decodeState(from: &bodyReader), bodyReader.isAtEnd else {
            throw corrupt(file, at: header.size, "the body does not decode")
        }
        return (state, header)
    }

    /// Walks a journal's frames after its header, and hands each frame's records to `apply` once the whole frame
    /// decodes.
    ///
    /// Returns where the valid frames end, and where what was written ends (see ``writtenEnd(_:from:)``): the same
    /// place for a journal that ends cleanly, its frames followed by nothing or by the zeros a journal is filled with
    /// ahead of its writes; further on for a torn or damaged last frame. A damaged frame that is followed by more
    /// written data is corruption, never a torn tail. A last frame whose bytes are all there but whose checksum fails
    /// is damage too, not a write cut short (`damagedTail`), unless it ends in a run of zeros from a 512-byte boundary
    /// on: what a power loss leaves in blocks that were never written.
    static func readJournal(
        _ bytes: UnsafeRawBufferPointer,
        header: Header,
        file: String,
        _ apply: ([StorageRecord]) -> Void
    ) throws(RelayError) -> (validLength: Int, writtenEnd: Int, records: Int, damagedTail: Bool) {
        var offset = header.size
        var records = 0
        let written = writtenEnd(bytes, from: header.size)
        while offset < written {
            let rest = written - offset
            guard rest >= frameHeaderSize else { return (offset, written, records, false) }
            var reader = ByteReader(bytes, offset: offset)
            // Twelve bytes remain, so these reads succeed.
            let length = (try? reader.fixed32()) ?? 0
            let complement = (try? reader.fixed32()) ?? 0
            let checksum = (try? reader.fixed32()) ?? 0
            guard length == ~complement else {
                // A write cut short leaves missing bytes, or zeros after a power loss, never wrong ones: a header
                // cut short, or zeros to the end.
                if rest <= frameHeaderSize || bytes[offset..<written].allSatisfy({ $0 == 0 }) {
                    return (offset, written, records, false)
                }
                throw corrupt(file, at: offset, "a record's length is damaged")
            }
            guard Int(length) <= bytes.count - offset - frameHeaderSize else {
                return (offset, written, records, false)
            }
            let payload = UnsafeRawBufferPointer(
                rebasing: bytes[offset + frameHeaderSize..<offset + frameHeaderSize + Int(length)]
            )
            let end = offset + frameHeaderSize + Int(length)
            guard CRC32.checksum(payload) == checksum else {
                if end >= written {
                    let damaged = !endsInUnwrittenBlocks(UnsafeRawBufferPointer(rebasing: bytes[..<end]), after: offset)
                    return (offset, max(written, end), records, damaged)
                }
                throw corrupt(file, at: offset, "checksum mismatch")
            }
            var payloadReader = ByteReader(payload)
            guard let frame = try? decodeFrame(from: &payloadReader, version: header.version),
                payloadReader.isAtEnd
            else {
                throw corrupt(file, at: offset, "a record does not decode")
            }
            apply(frame)
            records += frame.count
            offset = end
        }
        return (offset, max(offset, written), records, false)
    }

    /// Where the written part of a journal ends.
    ///
    /// That is its length, less a run of zeros to the end of at least 512 bytes, which is either the zeros a journal
    /// is filled with ahead of its writes or blocks a power loss left unwritten. A shorter run is part of what was
    /// written.
    static func writtenEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var end = bytes.count
        while end > start, bytes[end - 1] == 0 { end -= 1 }
        return bytes.count - end >= 512 ? end : bytes.count
    }

    /// Whether the bytes from some 512-byte boundary after `start` to the end are all zeros.
    private static func endsInUnwrittenBlocks(_ bytes: UnsafeRawBufferPointer, after start: Int) -> Bool {
        var zeros = bytes.count
        while zeros > start, bytes[zeros - 1] == 0 { zeros -= 1 }
        let boundary = (zeros + 511) / 512 * 512
        return boundary < bytes.count && boundary >= start
    }

    private static func decodeFrame(
        from reader: inout ByteReader,
        version: UInt32
    ) throws(ByteReader.Malformed) -> [StorageRecord] {
        guard version >= 2 else { return [try RecordCodec.decodeRecord(from: &reader)] }
        let count = try reader.count()
        var records: [StorageRecord] = []
        records.reserveCapacity(count)
        for _ in 0..<count { records.append(try RecordCodec.decodeRecord(from: &reader)) }
        return records
    }
}
