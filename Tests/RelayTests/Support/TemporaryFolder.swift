import Foundation

/// A fresh folder under the system's temporary directory, removed by `remove()`.
struct TemporaryFolder {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("relay-tests-\(UUID().uuidString)")
    }

    var journal: URL { url.appendingPathComponent("journal") }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Runs `body` with a temporary folder and removes it afterwards.
func withTemporaryFolder<Result>(_ body: (TemporaryFolder) async throws -> Result) async throws -> Result {
    let folder = TemporaryFolder()
    defer { folder.remove() }
    return try await body(folder)
}
