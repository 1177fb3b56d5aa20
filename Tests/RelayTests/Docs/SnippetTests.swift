import Foundation
import Testing

/// Keeps the documentation's code true: every Swift snippet of the README and of the DocC articles must appear in a
/// test source, line for line and in order (indentation aside, and with other lines between allowed), so that it is
/// compiled with the tests; most also run there.
@Suite("Documentation snippets")
struct SnippetTests {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The Swift snippets of a Markdown file: each fenced block marked `swift`, with the line it starts on.
    static func snippets(in file: URL) throws -> [(line: Int, lines: [String])] {
        var snippets: [(Int, [String])] = []
        var current: [String]?
        var start = 0
        for (number, line) in try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n").enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if current == nil, trimmed == "```swift" {
                current = []
                start = number + 1
            } else if let lines = current, trimmed.hasPrefix("```") {
                snippets.append((start, lines))
                current = nil
            } else if current != nil, !trimmed.isEmpty {
                current!.append(trimmed)
            }
        }
        return snippets
    }

    /// How many of `snippet`'s lines `source` holds in order, from the first.
    static func matchedPrefix(of snippet: [String], in source: [String]) -> Int {
        var matched = 0
        for line in source where matched < snippet.count && line == snippet[matched] { matched += 1 }
        return matched
    }

    @Test("every Swift snippet of the README and the articles is compiled, line for line, in a test source")
    func snippetsAreInTests() throws {
        let articles = try FileManager.default.contentsOfDirectory(
            at: Self.root.appendingPathComponent("Docs.docc"), includingPropertiesForKeys: nil
        ).filter { $0.pathExtension == "md" }
        let documents = [Self.root.appendingPathComponent("README.md")] + articles.sorted { $0.path < $1.path }
        let tests = Self.root.appendingPathComponent("Tests")
        let enumerator = try #require(FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil))
        let sources = try enumerator.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.map { file in
            try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        var count = 0
        for document in documents {
            for (line, snippet) in try Self.snippets(in: document) {
                count += 1
                let best = sources.map { Self.matchedPrefix(of: snippet, in: $0) }.max() ?? 0
                #expect(
                    best == snippet.count,
                    "\(document.lastPathComponent):\(line): no test holds this snippet; the first line missing is \"\(snippet[min(best, snippet.count - 1)])\""
                )
            }
        }
        #expect(count >= 30)
    }
}
