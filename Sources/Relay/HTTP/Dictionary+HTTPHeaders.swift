extension Dictionary where Key == String, Value == String {
    /// The value of a header by case-insensitive name: HTTP header names are case-insensitive, and servers and
    /// callers spell them as they like.
    func headerValue(_ name: String) -> String? {
        let lowered = name.lowercased()
        return first { $0.key.lowercased() == lowered }?.value
    }
}
