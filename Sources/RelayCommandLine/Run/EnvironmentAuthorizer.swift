import Foundation
import Relay

/// Applies a plan's secret headers when each request is sent, reading their values from the environment.
///
/// An operation stores only the header's template, such as `Bearer ${SHOP_TOKEN}`, under ``userInfoPrefix``; the
/// value of the variable is read at send time and never reaches the store.
struct EnvironmentAuthorizer: RequestAuthorizer {
    static let userInfoPrefix = "relay.secretHeader."

    let environment: [String: String]

    func authorize(_ request: inout CallRequest, for operation: CallOperation) async throws {
        for (key, template) in operation.persistentUserInfo where key.hasPrefix(Self.userInfoPrefix) {
            let header = String(key.dropFirst(Self.userInfoPrefix.count))
            request.setSecretHeader(header, try expand(template, header: header))
        }
    }

    /// The template with each `$NAME` or `${NAME}` replaced by the variable's value.
    func expand(_ template: String, header: String) throws -> String {
        var result = ""
        var rest = Substring(template)
        while let dollar = rest.firstIndex(of: "$") {
            result += rest[..<dollar]
            let (name, after) = Self.variable(at: dollar, in: rest)
            guard let name else {
                result.append("$")
                rest = rest[rest.index(after: dollar)...]
                continue
            }
            guard let value = environment[name] else {
                throw RelayError(.invalidArgument, "the \(header) header needs environment variable \(name), not set")
            }
            result += value
            rest = rest[after...]
        }
        return result + rest
    }

    /// The names of the variables a template reads.
    static func variables(in template: String) -> [String] {
        var names: [String] = []
        var rest = Substring(template)
        while let dollar = rest.firstIndex(of: "$") {
            let (name, after) = variable(at: dollar, in: rest)
            if let name { names.append(name) }
            rest = rest[(name == nil ? rest.index(after: dollar) : after)...]
        }
        return names
    }

    private static func variable(at dollar: Substring.Index, in text: Substring) -> (String?, Substring.Index) {
        var index = text.index(after: dollar)
        let braced = index < text.endIndex && text[index] == "{"
        if braced { index = text.index(after: index) }
        let start = index
        // A name starts with a letter or an underscore, as in a shell: `$5` is five dollars.
        guard index < text.endIndex, text[index].isLetter || text[index] == "_" else { return (nil, index) }
        while index < text.endIndex, text[index].isLetter || text[index].isNumber || text[index] == "_" {
            index = text.index(after: index)
        }
        guard start < index else { return (nil, index) }
        let name = String(text[start..<index])
        if braced {
            guard index < text.endIndex, text[index] == "}" else { return (nil, index) }
            index = text.index(after: index)
        }
        return (name, index)
    }
}
