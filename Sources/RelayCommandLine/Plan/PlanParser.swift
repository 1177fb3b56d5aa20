import Foundation
import Relay

/// Reads a plan from JSON and checks every field, naming the first one at fault.
///
/// It reads through `JSONSerialization` rather than `Decodable`, so that an unknown or misspelled field is an error
/// that names it rather than a field silently ignored, and a wrong type names the field and the type it needs.
struct PlanParser {
    /// Where relative paths of bodies and downloads start: the plan's folder.
    var baseFolder: URL
    /// The environment that secret headers read.
    var environment: [String: String]

    private static let defaultSequences: Set<String> = ["data", "downloads", "uploads"]
    private static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    /// Where JSON that does not parse goes wrong, by line and column, as far as the parser tells.
    static func describe(_ error: any Error, in data: Data) -> String {
        let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
        guard let range = detail.range(of: #"character (\d+)"#, options: .regularExpression),
            let offset = Int(detail[range].dropFirst("character ".count))
        else { return detail }
        var line = 1
        var column = 1
        for byte in data.prefix(offset) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        let what = detail.components(separatedBy: " around").first ?? detail
        return "\(what.lowercased()) at line \(line), column \(column)"
    }

    /// Reads the plan in `file`; its name defaults to the file's name without its extension.
    func parse(file: URL) throws(PlanError) -> Plan {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: file.path, isDirectory: &isFolder), isFolder.boolValue {
            throw PlanError(field: file.path, message: "is a folder; name the plan's JSON file")
        }
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw PlanError(field: file.path, message: "cannot be read: \(error.localizedDescription)")
        }
        return try parse(data, defaultName: file.deletingPathExtension().lastPathComponent)
    }

    func parse(_ data: Data, defaultName: String) throws(PlanError) -> Plan {
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw PlanError(field: "plan", message: "is not JSON: \(Self.describe(error, in: data))")
        }
        let object = try Fields(root, at: "", allowed: ["name", "sequences", "calls", "deadline"])
        let name = try object.string("name") ?? defaultName
        guard !name.isEmpty else { throw PlanError(field: "name", message: "must not be empty") }
        let deadline = try object.double("deadline")
        if let deadline, !(deadline > 0 && deadline.isFinite) {
            throw PlanError(field: "deadline", message: "must be a positive number of seconds")
        }
        var sequences: [Plan.Sequence] = []
        for (index, value) in try object.array("sequences").enumerated() {
            sequences.append(try sequence(value, at: "sequences[\(index)]", declared: sequences))
        }
        let callValues = try object.array("calls")
        guard !callValues.isEmpty else { throw PlanError(field: "calls", message: "a plan needs at least one call") }
        let known = Self.defaultSequences.union(sequences.map(\.name))
        var calls: [Plan.Call] = []
        for (index, value) in callValues.enumerated() {
            let call = try self.call(value, at: "calls[\(index)]", sequences: known)
            if calls.contains(where: { $0.name == call.name }) {
                throw PlanError(field: "calls[\(index)].name", message: "\"\(call.name)\" names an earlier call too")
            }
            calls.append(call)
        }
        try checkDependencies(of: calls)
        return Plan(name: name, sequences: sequences, calls: calls, deadline: deadline)
    }

    private func sequence(_ value: Any, at path: String, declared: [Plan.Sequence]) throws(PlanError) -> Plan.Sequence {
        let fields = try Fields(value, at: path, allowed: ["name", "bunchSize", "algorithm"])
        guard let name = try fields.string("name"), !name.isEmpty else {
            throw PlanError(field: "\(path).name", message: "a sequence needs a name")
        }
        guard !declared.contains(where: { $0.name == name }) else {
            throw PlanError(field: "\(path).name", message: "\"\(name)\" is declared twice")
        }
        let bunchSize = try fields.int("bunchSize") ?? 1
        guard (1...1024).contains(bunchSize) else {
            throw PlanError(field: "\(path).bunchSize", message: "must be from 1 to 1024; it is \(bunchSize)")
        }
        let algorithm = try fields.string("algorithm") ?? "flat"
        guard CallSequence.Algorithm(rawValue: algorithm) != nil else {
            throw PlanError(
                field: "\(path).algorithm", message: "must be \"flat\" or \"commitGraph\", not \"\(algorithm)\"")
        }
        return Plan.Sequence(name: name, bunchSize: bunchSize, algorithm: algorithm)
    }

    private func call(_ value: Any, at path: String, sequences: Set<String>) throws(PlanError) -> Plan.Call {
        let fields = try Fields(
            value, at: path,
            allowed: [
                "name", "method", "url", "headers", "secretHeaders", "body", "bodyFile", "download", "dependsOn",
                "sequence", "priority", "retry", "timeout",
            ])
        guard let name = try fields.string("name"), !name.isEmpty else {
            throw PlanError(field: "\(path).name", message: "a call needs a name")
        }
        let method = (try fields.string("method") ?? "GET").uppercased()
        guard Self.methods.contains(method) else {
            throw PlanError(field: "\(path).method", message: "\"\(method)\" is not an HTTP method Relay sends")
        }
        guard let url = try fields.string("url") else { throw PlanError(field: "\(path).url", message: "is missing") }
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
            ["http", "https"].contains(scheme),
            parsed.host?.isEmpty == false
        else {
            throw PlanError(field: "\(path).url", message: "\"\(url)\" is not an absolute http or https URL")
        }
        let headers = try fields.strings("headers")
        for header in headers.keys where ["authorization", "proxy-authorization"].contains(header.lowercased()) {
            throw PlanError(
                field: "\(path).headers.\(header)",
                message: "would be written to the store; put it in secretHeaders with an environment variable")
        }
        let secretHeaders = try fields.strings("secretHeaders")
        for (header, template) in secretHeaders {
            let names = EnvironmentAuthorizer.variables(in: template)
            guard !names.isEmpty else {
                throw PlanError(
                    field: "\(path).secretHeaders.\(header)",
                    message: "names no environment variable; write its value as \"$NAME\" or \"Bearer ${NAME}\"")
            }
        }
        let body = try fields.string("body")
        let bodyFile = try fields.string("bodyFile").map { resolve($0) }
        if body != nil, bodyFile != nil {
            throw PlanError(field: "\(path).bodyFile", message: "a call has a body or a bodyFile, not both")
        }
        if let bodyFile, !FileManager.default.isReadableFile(atPath: bodyFile) {
            throw PlanError(field: "\(path).bodyFile", message: "\(bodyFile) cannot be read")
        }
        let sequence = try fields.string("sequence")
        if let sequence, !sequences.contains(sequence) {
            throw PlanError(
                field: "\(path).sequence", message: "\"\(sequence)\" is neither declared in sequences nor a default one"
            )
        }
        let timeout = try fields.double("timeout")
        if let timeout, !(timeout > 0) {
            throw PlanError(field: "\(path).timeout", message: "must be a positive number of seconds")
        }
        return Plan.Call(
            name: name, method: method, url: url, headers: headers, secretHeaders: secretHeaders, body: body,
            bodyFile: bodyFile, download: try fields.string("download").map { resolve($0) },
            dependsOn: try fields.array("dependsOn").enumerated().map { (index, value) throws(PlanError) in
                guard let name = value as? String else {
                    throw PlanError(field: "\(path).dependsOn[\(index)]", message: "must be the name of a call")
                }
                return name
            },
            sequence: sequence, priority: try fields.int("priority") ?? 0,
            retry: try fields.value("retry").map { value throws(PlanError) in try retry(value, at: "\(path).retry") },
            timeout: timeout)
    }

    private func retry(_ value: Any, at path: String) throws(PlanError) -> Plan.Retry {
        let fields = try Fields(value, at: path, allowed: ["attempts", "initialDelay", "maximumDelay"])
        let attempts = try fields.int("attempts") ?? 5
        guard (1...1000).contains(attempts) else {
            throw PlanError(field: "\(path).attempts", message: "must be from 1 to 1000; it is \(attempts)")
        }
        let initialDelay = try fields.double("initialDelay") ?? 1
        let maximumDelay = try fields.double("maximumDelay") ?? max(60, initialDelay)
        guard initialDelay >= 0, initialDelay.isFinite else {
            throw PlanError(field: "\(path).initialDelay", message: "must be seconds, zero or more")
        }
        guard maximumDelay >= initialDelay, maximumDelay.isFinite else {
            throw PlanError(field: "\(path).maximumDelay", message: "must be seconds, at least the initialDelay")
        }
        return Plan.Retry(attempts: attempts, initialDelay: initialDelay, maximumDelay: maximumDelay)
    }

    /// Every dependency names another call, and following them never comes back to where it started.
    private func checkDependencies(of calls: [Plan.Call]) throws(PlanError) {
        let index = Dictionary(uniqueKeysWithValues: calls.enumerated().map { ($1.name, $0) })
        for (position, call) in calls.enumerated() {
            for (dependencyIndex, dependency) in call.dependsOn.enumerated() {
                let field = "calls[\(position)].dependsOn[\(dependencyIndex)]"
                guard index[dependency] != nil else {
                    throw PlanError(field: field, message: "no call is named \"\(dependency)\"")
                }
                guard dependency != call.name else {
                    throw PlanError(field: field, message: "a call cannot wait for itself")
                }
            }
        }
        // Depth-first search with three colours; a grey call met again closes a cycle.
        var colour = [Int](repeating: 0, count: calls.count)
        for start in calls.indices where colour[start] == 0 {
            var stack: [(call: Int, next: Int)] = [(start, 0)]
            colour[start] = 1
            while let (current, next) = stack.last {
                let dependencies = calls[current].dependsOn
                guard next < dependencies.count else {
                    colour[current] = 2
                    stack.removeLast()
                    continue
                }
                stack[stack.count - 1].next += 1
                let dependency = index[dependencies[next]]!
                if colour[dependency] == 1 {
                    let cycle = stack.map { calls[$0.call].name }.drop { $0 != calls[dependency].name }
                    throw PlanError(
                        field: "calls[\(current)].dependsOn",
                        message: "makes a cycle: \((cycle + [calls[dependency].name]).joined(separator: " → "))")
                }
                if colour[dependency] == 0 {
                    colour[dependency] = 1
                    stack.append((dependency, 0))
                }
            }
        }
    }

    private func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : baseFolder.appendingPathComponent(path).standardizedFileURL.path
    }
}

/// A JSON object's fields, read by name with the path of each in errors.
private struct Fields {
    let values: [String: Any]
    let path: String

    init(_ value: Any, at path: String, allowed: Set<String>) throws(PlanError) {
        guard let values = value as? [String: Any] else {
            throw PlanError(field: path.isEmpty ? "plan" : path, message: "must be an object")
        }
        if let unknown = values.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw PlanError(
                field: path.isEmpty ? unknown : "\(path).\(unknown)",
                message:
                    "is not a field of \(path.isEmpty ? "a plan" : path); known fields are \(allowed.sorted().joined(separator: ", "))"
            )
        }
        self.values = values
        self.path = path
    }

    func field(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func value(_ key: String) -> Any? {
        guard let value = values[key], !(value is NSNull) else { return nil }
        return value
    }

    func string(_ key: String) throws(PlanError) -> String? {
        guard let value = value(key) else { return nil }
        guard let string = value as? String else { throw PlanError(field: field(key), message: "must be a string") }
        return string
    }

    func int(_ key: String) throws(PlanError) -> Int? {
        guard let value = value(key) else { return nil }
        guard let number = value as? NSNumber, let int = Int(exactly: number.doubleValue) else {
            throw PlanError(field: field(key), message: "must be a whole number")
        }
        return int
    }

    func double(_ key: String) throws(PlanError) -> Double? {
        guard let value = value(key) else { return nil }
        guard let number = value as? NSNumber else { throw PlanError(field: field(key), message: "must be a number") }
        return number.doubleValue
    }

    func array(_ key: String) throws(PlanError) -> [Any] {
        guard let value = value(key) else { return [] }
        guard let array = value as? [Any] else { throw PlanError(field: field(key), message: "must be an array") }
        return array
    }

    func strings(_ key: String) throws(PlanError) -> [String: String] {
        guard let value = value(key) else { return [:] }
        guard let object = value as? [String: Any] else {
            throw PlanError(field: field(key), message: "must be an object of strings")
        }
        var strings: [String: String] = [:]
        for (name, value) in object {
            guard let string = value as? String else {
                throw PlanError(field: "\(field(key)).\(name)", message: "must be a string")
            }
            strings[name] = string
        }
        return strings
    }
}
