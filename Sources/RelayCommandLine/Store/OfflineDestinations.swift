import Foundation
import Relay

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The destinations a running plan finds offline, kept in the store's folder (`offline.json`) while they last, so that
/// `relay status` shows them: the run writes the file as destinations go offline and come back, and removes it when it
/// ends; `relay status` reads it only while a relay process holds the store, so a file a killed run left says nothing.
struct OfflineDestinations {
    /// One destination that does not answer.
    struct Entry: Codable, Sendable, Equatable {
        var destination: String
        var reason: String
        var since: Date
    }

    static let fileName = "offline.json"

    let file: URL
    private var entries: [String: Entry] = [:]

    init(store: URL) {
        file = store.appendingPathComponent(Self.fileName)
    }

    /// Notes a destination going offline or coming back, and writes the file when the list changed.
    mutating func note(_ event: CallEvent) {
        switch event.kind.value {
        case .offline(let destination, let reason):
            guard entries[destination] == nil else { return }
            entries[destination] = Entry(destination: destination, reason: reason, since: event.date)
        case .online(let destination, _):
            guard entries.removeValue(forKey: destination) != nil else { return }
        default:
            return
        }
        save()
    }

    /// Removes the file, at the end of the run.
    func remove() {
        unlink(file.path)
    }

    /// Writes the list whole, mode 0600, in place of the last one; nothing at all when it is empty.
    private func save() {
        guard !entries.isEmpty else { return remove() }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        guard let data = try? encoder.encode(entries.values.sorted { $0.destination < $1.destination }) else { return }
        let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(Self.fileName).new")
        guard (try? data.write(to: temporary)) != nil else { return }
        chmod(temporary.path, 0o600)
        rename(temporary.path, file.path)
    }

    /// The destinations a running plan found offline and that have not answered since.
    static func read(in store: URL) -> [Entry] {
        guard let data = try? Data(contentsOf: store.appendingPathComponent(fileName)) else { return [] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return (try? decoder.decode([Entry].self, from: data)) ?? []
    }
}
