import Foundation

/// The store that `--store` names: a folder, or a URL that a kind of store reaches.
enum StoreLocation {
    case folder(URL)
    case remote(URL, CommandLineStore)

    /// The location `text` names, or `nil` for a URL whose scheme none of `stores` reaches.
    init?(_ text: String, stores: [CommandLineStore]) {
        guard let scheme = Self.scheme(of: text) else {
            self = .folder(URL(fileURLWithPath: text).standardizedFileURL)
            return
        }
        guard let url = URL(string: text), let store = stores.first(where: { $0.scheme == scheme }) else { return nil }
        self = .remote(url, store)
    }

    /// The scheme of `text` when it is a URL, such as `postgres` for `postgres://host/db`.
    static func scheme(of text: String) -> String? {
        guard let range = text.range(of: "://") else { return nil }
        let scheme = text[..<range.lowerBound]
        guard !scheme.isEmpty, scheme.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) else {
            return nil
        }
        return scheme.lowercased()
    }

    /// How messages name it: a folder's path, or a URL without its password.
    var name: String {
        switch self {
        case .folder(let folder):
            return folder.path
        case .remote(let url, _):
            guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false), parts.password != nil else {
                return url.absoluteString
            }
            parts.password = "****"
            return parts.string ?? url.absoluteString
        }
    }

    /// The folder, for the commands that only work on one.
    func folder(for command: String) throws(UsageError) -> URL {
        guard case .folder(let folder) = self else {
            throw UsageError(message: "relay \(command) takes a folder for --store, not \(name)")
        }
        return folder
    }
}
