import Foundation

/// How one model relates to another (S23).
///
/// `owns` and `ownedBy` are the two directions of ownership: erasing an owner erases what it owns, unless another
/// owner of it is alive. A `free` relation is a link and nothing more: erasing either side leaves the other.
///
/// A closed enum: these cases are the whole set, and a `switch` over them needs no `default`.
public enum Relationship: String, Codable, Sendable, Hashable {
    /// The first model owns the second.
    case owns
    /// The first model is owned by the second.
    case ownedBy
    /// The models are linked, and neither owns the other.
    case free
}

/// A relation as the document stores it: ownership always from owner to owned (`owns`, never `ownedBy`), and a free
/// link's two models in order, so that each relation has one form.
///
/// A store reads it from a change of the document's relations (``ModelChange/relation``), to index relations by the
/// models they name.
public struct Relation: Sendable, Hashable, CustomStringConvertible {
    /// The owner, or the first model of a free link.
    public let from: Alias
    /// `owns` or `free`.
    public let kind: Relationship
    /// What is owned, or the second model of a free link.
    public let to: Alias

    /// The relation, as in `orders/42 owns items/123`.
    public var description: String { "\(from) \(kind) \(to)" }

    /// The relation `a kind b`, with `ownedBy` turned around into `owns`, and a free link's two models in order, so
    /// that each relation has one stored form.
    ///
    /// - Parameters:
    ///   - a: The first model.
    ///   - kind: How `a` relates to `b`.
    ///   - b: The second model.
    public init(_ a: Alias, _ kind: Relationship, _ b: Alias) {
        switch kind {
        case .ownedBy: (from, self.kind, to) = (b, .owns, a)
        case .free where b.description < a.description: (from, self.kind, to) = (b, .free, a)
        case .owns, .free: (from, self.kind, to) = (a, kind, b)
        }
    }

    /// The change that stores the relation, or removes it, in the document's relations; the key says it all, so
    /// the stored form is empty.
    func change(removing: Bool) -> ModelChange {
        ModelChange(collection: Document.relations, id: storedID, encoded: removing ? nil : Data())
    }

    /// The model this relation makes related to `model` by `kind`, if it does.
    func other(than model: Alias, by kind: Relationship) -> Alias? {
        switch (self.kind, kind) {
        case (.owns, .owns): from == model ? to : nil
        case (.owns, .ownedBy): to == model ? from : nil
        case (.free, .free): from == model ? to : to == model ? from : nil
        default: nil
        }
    }

    /// The relation's key in the document's relations: its kind, then its two models, each part prefixed with its
    /// length in bytes so that any collection name or id reads back whole, as in `owns 5:items 3:123 6:orders 2:42`.
    var storedID: String {
        var key = kind.rawValue
        for part in [from.collection, from.id, to.collection, to.id] {
            key += " \(part.utf8.count):"
            key += part
        }
        return key
    }

    /// The relation a stored key names; `nil` for a key in no form Relay writes.
    init?(storedID key: String) {
        let bytes = Array(key.utf8)
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")),
            let kind = Relationship(rawValue: String(decoding: bytes[..<space], as: UTF8.self))
        else { return nil }
        var parts: [String] = []
        var offset = space
        while offset < bytes.count {
            guard bytes[offset] == UInt8(ascii: " "), let colon = bytes[offset...].firstIndex(of: UInt8(ascii: ":")),
                let length = Int(String(decoding: bytes[(offset + 1)..<colon], as: UTF8.self)), length >= 0,
                colon + 1 + length <= bytes.count
            else { return nil }
            parts.append(String(decoding: bytes[(colon + 1)..<(colon + 1 + length)], as: UTF8.self))
            offset = colon + 1 + length
        }
        guard parts.count == 4 else { return nil }
        from = Alias(collection: parts[0], id: parts[1])
        self.kind = kind
        to = Alias(collection: parts[2], id: parts[3])
    }
}
