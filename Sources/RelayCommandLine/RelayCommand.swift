import Foundation
import Relay

typealias OperationQueryState = OperationQuery.State

/// `relay`: runs plans of HTTP calls durably and shows what a store holds.
public enum RelayCommand {
    /// Runs the command with `words`, its arguments without the command's name, and returns its exit status.
    ///
    /// - Parameters:
    ///   - words: The arguments, such as `["status", "--store", "postgres://host/db"]`.
    ///   - stores: The kinds of store it reaches through a URL given to `--store`, besides folders.
    /// - Returns: The exit status: 0 for success, 1 for a failure, 2 for a bad command line or plan, 3 for a store
    ///   that cannot be used, 130 when stopped.
    public static func run(_ words: [String], stores: [CommandLineStore]) async -> Int32 {
        await exitStatus(words, stores: stores).rawValue
    }

    /// The command's version.
    static let version = "0.1.0"

    /// The errors of a store that cannot be used, which exit with ``ExitStatus/storeError``.
    static let storeCodes: Set<RelayError.Code> = [.storageFailure, .corruptStore, .unsupportedFormat]

    static func exitStatus(_ words: [String], stores: [CommandLineStore]) async -> ExitStatus {
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
            let text = arguments.value(CommandSpec.store) ?? (command == .demo ? ".relay/demo" : ".relay")
            guard let store = StoreLocation(text, stores: stores) else {
                return try await delegate(words, scheme: StoreLocation.scheme(of: text) ?? "")
            }
            return try await command.run(arguments, store: store)
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

    /// Runs the command beside this one that reaches stores of `scheme`, `relay-<scheme>`, with `words`.
    static func delegate(_ words: [String], scheme: String) async throws -> ExitStatus {
        let isPostgres = scheme == "postgres" || scheme == "postgresql"
        let name = "relay-" + (isPostgres ? "postgres" : scheme)
        let beside = (Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0]))
            .resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: beside.path) else {
            throw UsageError(
                message: "relay reaches \(scheme):// stores through \(name), which is not beside it; "
                    + (isPostgres
                        ? "run it instead, from the Integrations package: "
                            + "swift run --package-path Integrations relay-postgres, with the same arguments"
                        : "no package of Relay's brings such a store"))
        }
        let process = Process()
        process.executableURL = beside
        process.arguments = words
        let status = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        return ExitStatus(rawValue: status) ?? .failure
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
