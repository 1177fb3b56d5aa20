import Foundation

/// The on-disk format of a file store.
///
/// A folder holds `snapshot` (the folded state), `journal` (records since that snapshot) and `lock`. Both data files
/// start with a 16-byte header: a 4-byte magic, a little-endian `UInt32` format version and a `UInt64` generation.
/// A snapshot's generation is the last journal generation it has folded in; a journal whose generation is not newer
/// than the snapshot's is already folded and is ignored.
///
/// A journal record is framed as its length (`UInt32`), the length's complement (`UInt32`), a CRC-32 of the payload
/// (`UInt32`), then the payload. A snapshot's body follows its header as its length (`UInt64`), a CRC-32, then the
/// body.
enum StoreFormat {
    static let version: UInt32 = 1
    static let headerSize = 16
    static let frameHeaderSize = 12
    static let journalMagic: [UInt8] = Array("RLYJ".utf8)
    static let snapshotMagic: [UInt8] = Array("RLYS".utf8)

    static func header(magic: [UInt8], generation: UInt64) -> ByteWriter {
        var writer = ByteWriter()
        writer.bytes.append(contentsOf: magic)
        writer.fixed32(version)
        writer.fixed64(generation)
        return writer
    }

    /// Appends one framed record.
    ///
    /// The payload is encoded in place after a reserved frame header, which is filled in afterwards: appends run
    /// under the pipeline's lock, so they copy nothing twice.
    static func appendFrame(_ record: StorageRecord, to writer: inout ByteWriter) {
        let start = writer.bytes.count
        writer.bytes.append(contentsOf: repeatElement(0, count: frameHeaderSize))
        RecordCodec.encode(record, into: &writer)
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

    /// Reads and checks a header; returns its generation.
    static func readHeader(
        _ bytes: UnsafeRawBufferPointer,
        magic: [UInt8],
        file: String
    ) throws(RelayError) -> UInt64 {
        guard bytes.count >= headerSize else { throw corrupt(file, at: 0, "the header is incomplete") }
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
        return generation
    }

    static func readSnapshot(_ bytes: UnsafeRawBufferPointer, file: String) throws(RelayError) -> (
        state: StoredState, generation: UInt64
    ) {
        let generation = try readHeader(bytes, magic: snapshotMagic, file: file)
        var reader = ByteReader(bytes, offset: headerSize)
        guard let length = try? reader.fixed64(), let checksum = try? reader.fixed32(),
            length <= UInt64(reader.remaining)
        else { throw corrupt(file, at: headerSize, "the body's length is wrong") }
        let body = UnsafeRawBufferPointer(rebasing: bytes[reader.offset..<reader.offset + Int(length)])
        guard CRC32.checksum(body) == checksum else { throw corrupt(file, at: reader.offset, "checksum mismatch") }
        var bodyReader = ByteReader(body)
        guard let state = try? RecordCodec.decodeState(from: &bodyReader), bodyReader.isAtEnd else {
            throw corrupt(file, at: headerSize, "the body does not decode")
        }
        return (state, generation)
    }

    /// Walks a journal's records after its header.
    ///
    /// Returns where the valid records end: the file's length, or the start of a torn last record. A damaged record
    /// that is followed by more data is corruption, never a torn tail.
    static func readJournal(
        _ bytes: UnsafeRawBufferPointer,
        file: String,
        _ apply: (StorageRecord) -> Void
    ) throws(RelayError) -> (validLength: Int, records: Int) {
        var offset = headerSize
        var records = 0
        while offset < bytes.count {
            let rest = bytes.count - offset
            guard rest >= frameHeaderSize else { return (offset, records) }
            var reader = ByteReader(bytes, offset: offset)
            // Twelve bytes remain, so these reads succeed.
            let length = (try? reader.fixed32()) ?? 0
            let complement = (try? reader.fixed32()) ?? 0
            let checksum = (try? reader.fixed32()) ?? 0
            guard length == ~complement else {
                // A write cut short leaves missing bytes, or zeros after a power loss, never wrong ones.
                if bytes[offset...].allSatisfy({ $0 == 0 }) { return (offset, records) }
                throw corrupt(file, at: offset, "a record's length is damaged")
            }
            guard Int(length) <= rest - frameHeaderSize else { return (offset, records) }
            let payload = UnsafeRawBufferPointer(
                rebasing: bytes[offset + frameHeaderSize..<offset + frameHeaderSize + Int(length)]
            )
            let end = offset + frameHeaderSize + Int(length)
            guard CRC32.checksum(payload) == checksum else {
                if end == bytes.count { return (offset, records) }
                throw corrupt(file, at: offset, "checksum mismatch")
            }
            var payloadReader = ByteReader(payload)
            guard let record = try? RecordCodec.decodeRecord(from: &payloadReader), payloadReader.isAtEnd else {
                throw corrupt(file, at: offset, "a record does not decode")
            }
            apply(record)
            records += 1
            offset = end
        }
        return (offset, records)
    }
}
