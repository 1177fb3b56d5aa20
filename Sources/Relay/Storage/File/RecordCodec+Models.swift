import Foundation

/// The binary form of a transaction's model changes and of a snapshot's collections.
extension RecordCodec {
    static func encodeModels(snapshot: UInt64, changes: [ModelChange], date: Date, into writer: inout ByteWriter) {
        writer.varint(snapshot)
        writer.date(date)
        encode(changes, into: &writer)
    }

    static func decodeModels(from reader: inout ByteReader) throws(ByteReader.Malformed) -> StorageRecord {
        let snapshot = try reader.snapshotNumber()
        let date = try reader.date()
        return StorageRecord(.models(snapshot: snapshot, changes: try decodeChanges(from: &reader), at: date))
    }

    /// Model changes, in order: a count, then each change's collection, id and encoded model (absent for a removal).
    static func encode(_ changes: [ModelChange], into writer: inout ByteWriter) {
        writer.varint(UInt64(changes.count))
        for change in changes {
            writer.string(change.collection)
            writer.string(change.id)
            writer.optional(change.encoded) { $0.blob($1) }
        }
    }

    static func decodeChanges(from reader: inout ByteReader) throws(ByteReader.Malformed) -> [ModelChange] {
        let count = try reader.count()
        var changes: [ModelChange] = []
        changes.reserveCapacity(count)
        for _ in 0..<count {
            let collection = try reader.string()
            let id = try reader.string()
            let encoded = try reader.optional { (reader) throws(ByteReader.Malformed) in try reader.blob() }
            changes.append(ModelChange(collection: collection, id: id, encoded: encoded))
        }
        return changes
    }

    /// Collections by name, each in id order, so that the same state always encodes the same.
    static func encode(_ collections: [String: [String: Data]], into writer: inout ByteWriter) {
        guard !collections.isEmpty else { return }
        writer.varint(UInt64(collections.count))
        for (name, models) in collections.sorted(by: { $0.key < $1.key }) {
            writer.string(name)
            writer.varint(UInt64(models.count))
            for (id, encoded) in models.sorted(by: { $0.key < $1.key }) {
                writer.string(id)
                writer.blob(encoded)
            }
        }
    }

    static func decodeCollections(from reader: inout ByteReader) throws(ByteReader.Malformed) -> [String: [String:
        Data]]
    {
        var collections: [String: [String: Data]] = [:]
        for _ in 0..<(try reader.count()) {
            let name = try reader.string()
            var models: [String: Data] = [:]
            let count = try reader.count()
            models.reserveCapacity(count)
            for _ in 0..<count { models[try reader.string()] = try reader.blob() }
            collections[name] = models
        }
        return collections
    }
}
