import Foundation
import Testing

/// Keeps the documentation's code true: every Swift snippet of the README, of the DocC articles and of the doc comments
/// in the sources must appear in a test source, line for line and in order (indentation aside, and with other lines
/// between allowed), so that it is compiled with the tests; most also run there.
@Suite("Documentation snippets")
struct SnippetTests {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The Swift snippets of a Markdown file: each fenced block marked `swift`, with the line it starts on.
    static func snippets(in file: URL) throws -> [(line: Int, lines: [String])] {
        try snippets(inLines: String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n"))
    }

    /// The Swift snippets of a source file's doc comments, with the line each starts on.
    static func docCommentSnippets(in file: URL) throws -> [(line: Int, lines: [String])] {
        let lines = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n").map { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            return trimmed.hasPrefix("///") ? String(trimmed.dropFirst(3)) : ""
        }
        return snippets(inLines: lines)
    }

    private static func snippets(inLines text: [String]) -> [(line: Int, lines: [String])] {
        var snippets: [(Int, [String])] = []
        var current: [String]?
        var start = 0
        for (number, line) in text.enumerated() {
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

    /// The Swift files under a folder of the package.
    private static func swiftFiles(under folder: String) throws -> [URL] {
        let url = root.appendingPathComponent(folder)
        let enumerator = try #require(FileManager.default.enumerator(at: url, includingPropertiesForKeys: nil))
        return enumerator.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }.sorted { $0.path < $1.path }
    }

    /// The test sources, and the example package's sources, each as its lines without indentation or blank lines.
    ///
    /// The README shows the orders example, which CI builds and tests in its own package (it needs Hummingbird).
    private static func testSources() throws -> [[String]] {
        try (swiftFiles(under: "Tests") + swiftFiles(under: "Integrations/Examples/Sources")).map { file in
            try String(contentsOf: file, encoding: .utf8).components(separatedBy: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
    }

    /// Expects each snippet in one of the sources; returns how many it checked.
    private static func expectInTests(
        _ snippets: [(line: Int, lines: [String])], of file: URL, sources: [[String]]
    ) -> Int {
        for (line, snippet) in snippets {
            let best = sources.map { matchedPrefix(of: snippet, in: $0) }.max() ?? 0
            #expect(
                best == snippet.count,
                "\(file.lastPathComponent):\(line): no test holds this snippet; the first line missing is \"\(snippet[min(best, snippet.count - 1)])\""
            )
        }
        return snippets.count
    }

    @Test("every Swift snippet of the README and the articles is compiled, line for line, in a test source")
    func snippetsAreInTests() throws {
        let articles = try FileManager.default.contentsOfDirectory(
            at: Self.root.appendingPathComponent("Docs.docc"), includingPropertiesForKeys: nil
        ).filter { $0.pathExtension == "md" }
        let documents = [Self.root.appendingPathComponent("README.md")] + articles.sorted { $0.path < $1.path }
        let sources = try Self.testSources()
        var count = 0
        for document in documents {
            count += Self.expectInTests(try Self.snippets(in: document), of: document, sources: sources)
        }
        #expect(count >= 30)
    }

    @Test("every Swift example in a doc comment is compiled, line for line, in a test source")
    func docCommentSnippetsAreInTests() throws {
        let sources = try Self.testSources()
        var count = 0
        for file in try Self.swiftFiles(under: "Sources") {
            count += Self.expectInTests(try Self.docCommentSnippets(in: file), of: file, sources: sources)
        }
        #expect(count >= 50)
    }
}
