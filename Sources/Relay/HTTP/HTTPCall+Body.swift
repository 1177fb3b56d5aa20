import Foundation

extension HTTPCall {
    /// What a call sends as its body.
    ///
    /// A closed enum: these cases are the whole set, and a `switch` over them needs no `default`.
    public enum Body: Codable, Sendable, Hashable {
        /// No body.
        case none
        /// These bytes.
        case data(Data)
        /// The contents of this file, read when each attempt is sent.
        case file(URL)
    }
}
