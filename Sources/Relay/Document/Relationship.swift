import Foundation

/// How one model relates to another (S23).
///
/// `owns` and `ownedBy` are the two directions of ownership: erasing an owner erases what it owns, unless another
/// owner of it is alive. A `free` relation is a link and nothing more: erasing either side leaves the other.
public enum Relationship: String, Codable, Sendable, Hashable {
    /// The first model owns the second.
    case owns
    /// The first model is owned by the second.
    case ownedBy
    /// The models are linked, and neither owns the other.
    case free
}

/// A relation as the document stores it: ownership always from owner to owned.
struct Relation: Codable, Sendable, Hashable {
    let from: Alias
    let kind: Relationship
    let to: Alias

    /// The relation `a kind b`, with `ownedBy` turned around into `owns`, and a free link's two models in order, so
    /// that each relation has one stored form.
    init(_ a: Alias, _ kind: Relationship, _ b: Alias) {
        switch kind {
        case .ownedBy: (from, self.kind, to) = (b, .owns, a)
        case .free where b.description < a.description: (from, self.kind, to) = (b, .free, a)
        case .owns, .free: (from, self.kind, to) = (a, kind, b)
        }
    }

    /// The change that stores the relation, or removes it, in the document's relations.
    func change(removing: Bool) -> ModelChange {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding three strings and a raw-value enum cannot fail.
        let encoded = (try? encoder.encode(self)) ?? Data()
        return ModelChange(
            collection: Document.relations, id: String(decoding: encoded, as: UTF8.self),
            encoded: removing ? nil : encoded)
    }

    /// The relation a stored change names, from its id.
    init?(storedID id: String) {
        guard let relation = try? JSONDecoder().decode(Relation.self, from: Data(id.utf8)) else { return nil }
        self = relation
    }
}
