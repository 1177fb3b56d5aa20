import Foundation
import Testing

/// Keeps the contract and its tests in step: the Guarantees article defines each point, the tests name the points
/// they check, and the article lists, under each point, the test files that check it.
@Suite("The Guarantees article and the tests that name its points")
struct GuaranteesArticleTests {
    private static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Each point the article defines, `- **S5 Dependencies.** …`, with the test files its "Checked in" sentence names
    /// (empty for a point not built yet).
    static func articlePoints() throws -> [Int: Set<String>] {
        let text = try String(
            contentsOf: root.appendingPathComponent("Docs.docc/Guarantees.md"), encoding: .utf8)
        var points: [Int: Set<String>] = [:]
        var current: Int?
        var paragraph = ""
        func close() {
            guard let point = current else { return }
            var files: Set<String> = []
            if let range = paragraph.range(of: "Checked in ") {
                let sentence = paragraph[range.upperBound...].prefix { $0 != "." }
                files = Set(
                    sentence.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter {
                        $0.offset % 2 == 1
                    }.map { String($0.element) })
            }
            points[point] = files
            current = nil
        }
        for line in text.components(separatedBy: "\n") {
            if line.hasPrefix("- **S"), let number = Int(line.dropFirst(5).prefix { $0.isNumber }) {
                close()
                current = number
                paragraph = line
            } else if line.hasPrefix("  "), current != nil {
                paragraph += " " + line.trimmingCharacters(in: .whitespaces)
            } else {
                close()
            }
        }
        close()
        return points
    }

    /// The points each test file names, in `@Test("S5: …")`, `@Test("S20/S23: …")` or `@Suite("S17 …")`, in this
    /// package's tests and the Integrations package's.
    static func namedPoints() throws -> [Int: Set<String>] {
        var points: [Int: Set<String>] = [:]
        for folder in ["Tests", "Integrations/Tests"] {
            let tests = root.appendingPathComponent(folder)
            let files = try #require(FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil))
            for case let file as URL in files where file.pathExtension == "swift" {
                try name(in: file, into: &points)
            }
        }
        return points
    }

    private static func name(in file: URL, into points: inout [Int: Set<String>]) throws {
        let text = try String(contentsOf: file, encoding: .utf8)
        let name = file.deletingPathExtension().lastPathComponent
        let lines = text.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        for (index, line) in lines.enumerated() {
            guard let attribute = ["@Test(", "@Suite("].first(where: line.hasPrefix) else { continue }
            // The name may begin on the attribute's line or on the next.
            var opening = line.dropFirst(attribute.count)
            if opening.isEmpty, index + 1 < lines.count { opening = Substring(lines[index + 1]) }
            guard opening.hasPrefix("\"S") else { continue }
            // "S20/S23: …": every number of the list that opens the name.
            let list = opening.dropFirst().prefix { $0.isNumber || $0 == "S" || $0 == "/" }
            for number in list.split(separator: "/").compactMap({ Int($0.dropFirst()) }) {
                points[number, default: []].insert(name)
            }
        }
    }

    @Test("every point a test names is defined in the Guarantees article")
    func namedPointsAreDefined() throws {
        let defined = try Self.articlePoints()
        let named = try Self.namedPoints()
        #expect(defined.count == 34, "the article defines S1 to S34")
        for (point, files) in named.sorted(by: { $0.key < $1.key }) {
            #expect(defined[point] != nil, "S\(point) is named by \(files.sorted()) but the article does not define it")
        }
    }

    @Test("every point built is named by a test, and the article lists the files that check it")
    func builtPointsAreChecked() throws {
        let defined = try Self.articlePoints()
        let named = try Self.namedPoints()
        for point in 1...25 {
            let files = named[point] ?? []
            #expect(!files.isEmpty, "no test names S\(point)")
            let listed = defined[point] ?? []
            #expect(
                listed == files,
                "S\(point) should read: Checked in \(files.sorted().map { "`\($0)`" }.joined(separator: ", ")).")
        }
        // The fleet's and the server's points are built a part at a time: each lists the files that check its parts.
        for point in 26...34 {
            let files = named[point] ?? []
            #expect(
                defined[point] == files,
                "S\(point) should list \(files.isEmpty ? "no test files" : files.sorted().joined(separator: ", ")).")
        }
    }
}
