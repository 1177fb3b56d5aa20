import Foundation

/// Status codes are stored as ranges, "408,429,500-599" rather than a hundred numbers: the call is decoded on every
/// attempt and stored with every operation. Optional parts are left out when empty.
extension HTTPCall {
    private enum CodingKeys: String, CodingKey {
        case method, url, headers, body, acceptedStatusCodes, retryableStatusCodes, timeout, destination
        case maximumRetryAfter, maximumRedirects, responseCollection
    }

    /// Decodes a call; status codes may be ranges in text or a list of numbers.
    ///
    /// - Parameter decoder: The decoder.
    /// - Throws: `DecodingError` when a field is missing or malformed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        method = try container.decode(Method.self, forKey: .method)
        url = try container.decode(URL.self, forKey: .url)
        headers = try container.decodeIfPresent([String: String].self, forKey: .headers) ?? [:]
        body = try container.decodeIfPresent(Body.self, forKey: .body) ?? .none
        acceptedStatusCodes = try Self.decodeStatusCodes(container, forKey: .acceptedStatusCodes)
        retryableStatusCodes = try Self.decodeStatusCodes(container, forKey: .retryableStatusCodes)
        timeout = try container.decode(Duration.self, forKey: .timeout)
        destination = try container.decodeIfPresent(URL.self, forKey: .destination)
        maximumRetryAfter = try container.decode(Duration.self, forKey: .maximumRetryAfter)
        maximumRedirects = try container.decode(Int.self, forKey: .maximumRedirects)
        responseCollection = try container.decodeIfPresent(String.self, forKey: .responseCollection)
    }

    /// Encodes the call.
    ///
    /// - Parameter encoder: The encoder.
    /// - Throws: What the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(method, forKey: .method)
        try container.encode(url, forKey: .url)
        if !headers.isEmpty { try container.encode(headers, forKey: .headers) }
        if body != .none { try container.encode(body, forKey: .body) }
        try container.encode(Self.ranges(of: acceptedStatusCodes), forKey: .acceptedStatusCodes)
        try container.encode(Self.ranges(of: retryableStatusCodes), forKey: .retryableStatusCodes)
        try container.encode(timeout, forKey: .timeout)
        try container.encodeIfPresent(destination, forKey: .destination)
        try container.encode(maximumRetryAfter, forKey: .maximumRetryAfter)
        try container.encode(maximumRedirects, forKey: .maximumRedirects)
        try container.encodeIfPresent(responseCollection, forKey: .responseCollection)
    }

    /// The codes as comma-separated numbers and inclusive ranges, in ascending order: "408,429,500-599".
    static func ranges(of codes: Set<Int>) -> String {
        var parts: [String] = []
        var sorted = codes.sorted()[...]
        while let first = sorted.popFirst() {
            var last = first
            while sorted.first == last + 1 { last = sorted.removeFirst() }
            parts.append(first == last ? "\(first)" : "\(first)-\(last)")
        }
        return parts.joined(separator: ",")
    }

    private static let successRanges = ranges(of: successStatusCodes)
    private static let transientRanges = ranges(of: transientStatusCodes)

    /// The codes written by ``ranges(of:)``, or `nil` when the text is malformed.
    static func statusCodes(fromRanges text: String) -> Set<Int>? {
        // Most calls keep the defaults, and building a set of a hundred codes on every attempt shows in profiles.
        if text == successRanges { return successStatusCodes }
        if text == transientRanges { return transientStatusCodes }
        var codes = Set<Int>()
        for part in text.split(separator: ",") {
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
            switch bounds.count {
            case 1:
                guard let code = bounds[0] else { return nil }
                codes.insert(code)
            case 2:
                guard let low = bounds[0], let high = bounds[1], low <= high, high - low < 1000 else { return nil }
                codes.formUnion(low...high)
            default:
                return nil
            }
        }
        return codes
    }

    private static func decodeStatusCodes(
        _ container: KeyedDecodingContainer<CodingKeys>,
        forKey key: CodingKeys
    ) throws -> Set<Int> {
        guard let text = try? container.decode(String.self, forKey: key) else {
            return try container.decode(Set<Int>.self, forKey: key)
        }
        guard let codes = statusCodes(fromRanges: text) else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: container, debugDescription: "status codes must read like \"408,429,500-599\"")
        }
        return codes
    }
}
