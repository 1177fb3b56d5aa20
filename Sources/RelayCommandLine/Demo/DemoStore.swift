import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The folder that `relay demo` keeps its store in, and the only kind of folder it ever empties.
///
/// The demo marks a folder it makes with a ``marker`` file. Before a run it empties a folder only when that folder
/// holds the marker and nothing the demo does not write itself, and only while no other process holds the store;
/// any other folder is refused with a ``StoreProblem`` and left as it was. An empty folder, or one that does not
/// exist yet, becomes a demo store.
struct DemoStore {
    /// The file that marks a folder as a demo store.
    static let marker = "relay-demo"
    /// What a demo store holds: the marker, the file store's files, the event socket, the list of offline destinations
    /// and the downloads.
    static let entries: Set<String> = [
        marker, "snapshot", "snapshot.new", "journal", "journal.new", "journal.sealed", "lock", "events.sock",
        OfflineDestinations.fileName, ".\(OfflineDestinations.fileName).new", "downloads",
    ]

    let folder: URL

    /// Makes the folder a demo store with nothing in it but the marker, or throws and changes nothing.
    func prepare() throws(StoreProblem) {
        let path = folder.path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            try create()
            return
        }
        guard isFolder.boolValue else {
            throw StoreProblem("\(path) is a file, not a folder; give relay demo a folder with --store")
        }
        let contents: [String]
        do {
            contents = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw StoreProblem("cannot read the folder \(path): \(error.localizedDescription)")
        }
        if contents.isEmpty {
            try writeMarker()
            return
        }
        guard contents.contains(Self.marker) || isEarlierDemoStore(contents) else {
            throw StoreProblem(
                "\(path) is not a demo store, so relay demo leaves it as it is. "
                    + "Give it a new or empty folder with --store, or leave --store out to use .relay/demo.")
        }
        let foreign = contents.filter { !Self.entries.contains($0) }.sorted()
        guard foreign.isEmpty else {
            throw StoreProblem(
                "\(path) is a demo store that also holds \(foreign.joined(separator: ", ")), "
                    + "so relay demo leaves it as it is; move those away or give it another folder with --store.")
        }
        try empty(contents)
        if !contents.contains(Self.marker) { try writeMarker() }
    }

    /// Whether the folder is a demo store from before the marker: only the demo's files, and a store whose only plan
    /// is the demo's.
    private func isEarlierDemoStore(_ contents: [String]) -> Bool {
        guard contents.allSatisfy({ Self.entries.contains($0) }), let reader = try? StoreReader(folder: folder) else {
            return false
        }
        return reader.plans.map(\.id) == ["demo"]
    }

    private func create() throws(StoreProblem) {
        do {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw StoreProblem("cannot make the folder \(folder.path): \(error.localizedDescription)")
        }
        try writeMarker()
    }

    private func writeMarker() throws(StoreProblem) {
        let text = "This folder is a store of relay demo, which empties it on each run.\n"
        let created = FileManager.default.createFile(
            atPath: folder.appendingPathComponent(Self.marker).path, contents: Data(text.utf8),
            attributes: [.posixPermissions: 0o600])
        guard created else { throw StoreProblem("cannot write in the folder \(folder.path)") }
    }

    /// Removes the demo's files while holding the store's lock, so that a store another process holds is never
    /// touched; the lock file and the marker stay.
    private func empty(_ contents: [String]) throws(StoreProblem) {
        let lockPath = folder.appendingPathComponent("lock").path
        let lock = open(lockPath, O_RDWR | O_CREAT, 0o600)
        guard lock >= 0 else { throw StoreProblem("cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        defer { close(lock) }
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            throw StoreProblem(
                "the demo store at \(folder.path) is held by a running relay process; "
                    + "wait for it to end, or stop it with Ctrl-C, then run relay demo again.")
        }
        for name in contents where name != "lock" && name != Self.marker {
            do {
                try FileManager.default.removeItem(at: folder.appendingPathComponent(name))
            } catch {
                throw StoreProblem("cannot empty the demo store at \(folder.path): \(error.localizedDescription)")
            }
        }
    }
}
