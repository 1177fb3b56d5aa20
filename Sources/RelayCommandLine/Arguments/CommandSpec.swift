/// A subcommand's name, arguments and options, from which both its parsing and its `--help` come.
struct CommandSpec: Sendable {
    struct Option: Sendable {
        /// The option's name with its dashes, such as `--store`.
        var name: String
        /// The value's placeholder, such as `DIR`; `nil` for a flag.
        var value: String?
        var help: String
    }

    var name: String
    var summary: String
    /// Positional arguments' placeholders, such as `PLAN.json`; each is required.
    var arguments: [String] = []
    var options: [Option] = []
    /// Paragraphs after the options.
    var details: String = ""

    static let store = Option(
        name: "--store", value: "DIR|URL", help: "The store's folder, .relay by default, or a database's URL.")
    static let json = Option(name: "--json", value: nil, help: "Print JSON, one object per line.")

    var usage: String {
        (["relay", name] + arguments
            + options.map { option in "[\(option.name)\(option.value.map { " \($0)" } ?? "")]" })
            .joined(separator: " ")
    }

    var help: String {
        var lines = ["\(summary)", "", "Usage: \(usage)"]
        if !options.isEmpty {
            lines += ["", "Options:"]
            for option in options + [Option(name: "--help", value: nil, help: "Show this help.")] {
                let left = option.name + (option.value.map { " \($0)" } ?? "")
                lines.append("  " + left.padding(toLength: 22, withPad: " ", startingAt: 0) + option.help)
            }
        }
        if !details.isEmpty { lines += ["", details] }
        return lines.joined(separator: "\n")
    }
}

/// Arguments that do not fit a command's usage.
struct UsageError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// A command that could not do what it was asked, for a reason the message gives; exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// A command line parsed against a ``CommandSpec``.
struct ParsedArguments: Sendable {
    var arguments: [String] = []
    var values: [String: String] = [:]
    var flags: Set<String> = []
    var wantsHelp = false

    init(_ words: [String], for spec: CommandSpec) throws(UsageError) {
        var words = words[...]
        while let word = words.popFirst() {
            if word == "--help" || word == "-h" {
                wantsHelp = true
                continue
            }
            guard word.hasPrefix("-"), word.count > 1 else {
                arguments.append(word)
                continue
            }
            let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
            guard let option = spec.options.first(where: { $0.name == parts[0] }) else {
                throw UsageError(message: "relay \(spec.name) has no option \(parts[0]); see relay \(spec.name) --help")
            }
            guard let placeholder = option.value else {
                guard parts.count == 1 else { throw UsageError(message: "\(option.name) takes no value") }
                flags.insert(option.name)
                continue
            }
            guard let value = parts.count == 2 ? parts[1] : words.popFirst(), !value.isEmpty else {
                throw UsageError(message: "\(option.name) needs a value: \(option.name) \(placeholder)")
            }
            values[option.name] = value
        }
        guard !wantsHelp else { return }
        guard arguments.count == spec.arguments.count else {
            let expected = spec.arguments.isEmpty ? "no arguments" : spec.arguments.joined(separator: " ")
            throw UsageError(message: "relay \(spec.name) takes \(expected); usage: \(spec.usage)")
        }
    }

    func value(_ option: CommandSpec.Option) -> String? { values[option.name] }
    func has(_ option: CommandSpec.Option) -> Bool { flags.contains(option.name) }
}

/// A store that the command cannot use, or will not change: missing, held, damaged, or not what it expects; exit
/// status 3.
struct StoreProblem: Error, CustomStringConvertible {
    var message: String
    var description: String { message }

    init(_ message: String) { self.message = message }
}
