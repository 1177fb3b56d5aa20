import Foundation

/// On a shared store, the version of each model, key-value and relation that the document holds or removed (the
/// number of the commit that last wrote it), and how far the store's follower has applied every change.
///
/// A change applies only over an earlier version (see ``SharedModelChange``), so that changes read late, or twice,
/// never undo later ones. A commit of this process's applies its changes as it returns, which may be after the
/// follower has read later changes of the same models; but a commit numbered no later than what the follower has
/// applied through was read by the follower already, as far as its changes still stand, and is passed over. So a
/// removed model's version matters only above that mark, and is forgotten below it: a long-running process keeps
/// versions in proportion to its document, not to everything it ever saw removed.
struct SharedModelVersions: Sendable {
    private var versions: [String: [String: UInt64]] = [:]
    /// Models whose last change was a removal, in the order they were removed; some may have been upserted again.
    private var removed: [Alias] = []
    /// The version through which the follower has applied every change.
    private(set) var followed: UInt64 = 0

    /// The version held for `model`; 0 when none is.
    func version(of model: Alias) -> UInt64 {
        versions[model.collection]?[model.id] ?? 0
    }

    /// Whether `change` applies, and takes its version if so.
    ///
    /// It applies when its version is later than the one held, or equal to one taken by an earlier change of the
    /// same commit (`taken`), which a commit that changes a model twice makes.
    mutating func admit(_ shared: SharedModelChange, taken: inout Set<Alias>) -> Bool {
        let model = Alias(collection: shared.change.collection, id: shared.change.id)
        let held = version(of: model)
        guard held < shared.version || (held == shared.version && taken.contains(model)) else { return false }
        versions[model.collection, default: [:]][model.id] = shared.version
        taken.insert(model)
        if shared.change.encoded == nil { removed.append(model) }
        return true
    }

    /// Notes that the follower has applied every change through `version`, and forgets the versions of models
    /// removed through it; `stillHeld` says which the document holds again.
    mutating func follow(through version: UInt64, stillHeld: (Alias) -> Bool) {
        guard version > followed else { return }
        followed = version
        removed = removed.filter { model in
            let held = self.version(of: model)
            guard held > 0, !stillHeld(model) else { return false }
            guard held <= version else { return true }
            versions[model.collection]?[model.id] = nil
            if versions[model.collection]?.isEmpty == true { versions[model.collection] = nil }
            return false
        }
    }

    /// How many versions are held.
    var count: Int { versions.values.reduce(0) { $0 + $1.count } }
}
