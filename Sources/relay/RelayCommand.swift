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
        } catch let error as UsageError {
            Output.error("relay: \(error)")
            return .badInput
        } catch let error as CommandFailure {
            Output.error("relay: \(error)")
            return .failure
        } catch let error as PlanFileError {
            Output.error("relay: bad plan: \(error)")
            return .badInput
        } catch let error as PlanError {
            Output.error("relay: bad plan: \(error)")
            return .badInput
        } catch let error as StoreProblem {
            Output.error("relay: \(error)")
            return .storeError
        } catch let error as RelayError where error.code == .storeLocked {
            Output.error(
                "relay: the store is held by another relay process; wait for it to end, or stop it with Ctrl-C "
                    + "(it resumes when run again). relay status and relay events --follow show what it does.")
            return .storeError
        } catch let error as RelayError where storeCodes.contains(error.code) {
            Output.error("relay: the store cannot be used: \(error.message)")
            return .storeError
        } catch {
            Output.error("relay: \(error)")
            return .failure
        }
    }
}
