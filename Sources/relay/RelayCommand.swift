import Foundation
import Relay

typealias OperationQueryState = OperationQuery.State

/// `relay`: runs plans of HTTP calls durably and shows what a store holds.
@main
enum RelayCommand {
    static func main() async {
        let status = await run(Array(CommandLine.arguments.dropFirst()))
        exit(status.rawValue)
    }

    /// The command's version.
    static let version = "0.1.0"

    /// The errors of a store that cannot be used, which exit with ``ExitStatus/storeError``.
    static let storeCodes: Set<RelayError.Code> = [.storageFailure, .corruptStore, .unsupportedFormat]

    static func run(_ words: [String]) async -> ExitStatus {
        guard let name = words.first else {
            Output.error(Command.overview)
            return .badInput
        }
        if ["--help", "-h", "help"].contains(name) {
            Output.line(Command.overview)
            return .success
        }
        if name == "--version" {
            Output.line("relay \(version)")
            return .success
        }
        guard let command = Command(rawValue: name) else {
            Output.error("relay: there is no command \(name)\n\n" + Command.overview)
            return .badInput
        }
        do {
            let arguments = try ParsedArguments(Array(words.dropFirst()), for: command.spec)
            if arguments.wantsHelp {
                Output.line(command.spec.help)
                return .success
            }
            return try await command.run(arguments)
        } catch {
            let (status, code, message) = judge(error)
            Output.error("relay: \(message)")
            if words.contains("--json") {
                let object: [String: Any] = [
                    "event": "error", "code": code, "message": message, "exitStatus": Int(status.rawValue),
                ]
                let data = (try? JSONSerialization.data(withJSONObject: object, options: .sortedKeys)) ?? Data()
                Output.line(String(decoding: data, as: UTF8.self))
            }
            return status
        }
    }

    /// The exit status, a code for scripts, and a sentence for people, for an error that ended a command.
    static func judge(_ error: any Error) -> (ExitStatus, code: String, message: String) {
        switch error {
        case let error as UsageError: (.badInput, "usage", "\(error)")
        case let error as CommandFailure: (.failure, "failed", "\(error)")
        case let error as PlanFileError: (.badInput, "badPlan", "bad plan: \(error)")
        case let error as PlanError: (.badInput, "badPlan", "bad plan: \(error)")
        case let error as StoreProblem: (.storeError, "store", "\(error)")
        case let error as RelayError where error.code == .storeLocked:
            (
                .storeError, "\(error.code)",
                "the store is held by another relay process; wait for it to end, or stop it with Ctrl-C "
                    + "(it resumes when run again). relay status and relay events --follow show what it does."
            )
        case let error as RelayError where storeCodes.contains(error.code):
            (.storeError, "\(error.code)", "the store cannot be used: \(error.message)")
        case let error as RelayError: (.failure, "\(error.code)", error.message)
        default: (.failure, "failed", "\(error)")
        }
    }
}
