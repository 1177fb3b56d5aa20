/// A plan that cannot run, with the field at fault: `calls[2].url`, say.
struct PlanError: Error, CustomStringConvertible {
    /// The path of the field, or the file for errors that concern it whole.
    var field: String
    var message: String

    var description: String { "\(field): \(message)" }
}
