/// The document's relations by model, both ways, so that resolving one costs the number of models it names, whatever
/// the size of their collections.
struct RelationIndex: Sendable {
    private var owned: [Alias: Set<Alias>] = [:]
    private var owners: [Alias: Set<Alias>] = [:]
    /// Free links, both ways.
    private var linked: [Alias: Set<Alias>] = [:]

    /// Whether the document holds no relation.
    var isEmpty: Bool { owned.isEmpty && linked.isEmpty }

    /// Adds or removes a relation.
    mutating func apply(_ relation: Relation, removing: Bool) {
        switch relation.kind {
        case .owns, .ownedBy:
            Self.update(&owned, relation.from, relation.to, removing: removing)
            Self.update(&owners, relation.to, relation.from, removing: removing)
        case .free:
            Self.update(&linked, relation.from, relation.to, removing: removing)
            Self.update(&linked, relation.to, relation.from, removing: removing)
        }
    }

    private static func update(_ index: inout [Alias: Set<Alias>], _ key: Alias, _ value: Alias, removing: Bool) {
        if removing {
            index[key]?.remove(value)
            if index[key]?.isEmpty == true { index[key] = nil }
        } else {
            index[key, default: []].insert(value)
        }
    }

    /// The models related to `model` by `kind`: what it owns, what owns it, or what it is linked to.
    func related(to model: Alias, by kind: Relationship) -> Set<Alias> {
        switch kind {
        case .owns: owned[model] ?? []
        case .ownedBy: owners[model] ?? []
        case .free: linked[model] ?? []
        }
    }

    /// What erasing `roots` erases: the roots, and what they own that no other living owner keeps, through any depth;
    /// a cycle of owners ends where it started.
    func erasure(of roots: [Alias], exists: (Alias) -> Bool) -> [Alias] {
        var erased: [Alias] = []
        var gone = Set<Alias>()
        var work = Array(roots.reversed())
        while let model = work.popLast() {
            guard exists(model), gone.insert(model).inserted else { continue }
            erased.append(model)
            for owned in related(to: model, by: .owns).sorted(by: { ($0.collection, $0.id) < ($1.collection, $1.id) })
            where related(to: owned, by: .ownedBy).subtracting(gone).isEmpty {
                work.append(owned)
            }
        }
        return erased
    }

    /// Every relation that names `model`, as stored.
    func relations(naming model: Alias) -> [Relation] {
        related(to: model, by: .owns).map { Relation(model, .owns, $0) }
            + related(to: model, by: .ownedBy).map { Relation($0, .owns, model) }
            + related(to: model, by: .free).map { Relation(model, .free, $0) }
    }
}
