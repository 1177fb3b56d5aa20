import Foundation
import Relay

/// The subcommands of `relay`.
enum Command: String, CaseIterable, Sendable {
    case run, status, list, show, replay, cancel, events, demo

    static let state = CommandSpec.Option(
        name: "--state", value: "STATE",
        help: "Only this state: pending, running, completed, skipped, failed, cancelled.")
    static let sequence = CommandSpec.Option(name: "--sequence", value: "NAME", help: "Only this sequence.")
    static let body = CommandSpec.Option(
        name: "--body", value: nil, help: "Print only the response body of a completed call, as it came.")
    static let follow = CommandSpec.Option(
        name: "--follow", value: nil,
        help: "Stream the events of the relay process running on the store, or of every process of a database's.")

    var spec: CommandSpec {
        switch self {
        case .run:
            CommandSpec(
                name: "run", summary: "Run a plan of HTTP calls durably; running it again resumes where it stopped.",
                arguments: ["PLAN.json"], options: [CommandSpec.store, CommandSpec.json],
                details: """
                    A plan is a JSON document: {"name", "deadline", "sequences": [{"name", "bunchSize", "algorithm"}], "calls": [{"name", \
                    "method", "url", "headers", "secretHeaders", "body" or "bodyFile", "download", "dependsOn", "sequence", \
                    "priority", "retry": {"attempts", "initialDelay", "maximumDelay"}, "timeout"}]}. Secret headers name \
                    environment variables ("Bearer ${TOKEN}"), read when each request is sent and never stored. Past \
                    "deadline" seconds, the calls that have not finished are cancelled; without one, a call's retries \
                    still end after a day.

                    On a terminal it draws a bar per sequence; on a pipe, or with --json, it prints one JSON line per event. \
                    Ctrl-C stops gracefully. Exit status: 0 when every call completed, 1 when one failed, 2 for a bad \
                    plan or command line, 3 when the store cannot be used (held, damaged, unwritable, not a folder), \
                    130 when stopped.
                    """)
        case .status:
            CommandSpec(
                name: "status", summary: "Show the store's plans and how many operations are in each state.",
                options: [CommandSpec.store, CommandSpec.json],
                details: """
                    It reads the store without opening it, so it works while a relay process runs on it; then it also \
                    names the destinations that run finds offline, since when and why.
                    """)
        case .list:
            CommandSpec(
                name: "list", summary: "List the store's operations, oldest first.",
                options: [CommandSpec.store, Self.state, Self.sequence, CommandSpec.json],
                details: """
                    It reads the store without opening it, so it works while a relay process runs on it; a database \
                    a page at a time.
                    """)
        case .show:
            CommandSpec(
                name: "show",
                summary: "Show one operation: its request, attempts and sends, last error and response status.",
                arguments: ["ID"], options: [CommandSpec.store, Self.body, CommandSpec.json],
                details: """
                    ID is an operation's id, or the start of one, or in a folder a call's name. A failed call's \
                    response body is \
                    shown up to 1 KiB; --body prints a completed call's whole body.
                    """)
        case .replay:
            CommandSpec(
                name: "replay",
                summary: "Enqueue a failed or cancelled operation again, with the same idempotency key.",
                arguments: ["ID"], options: [CommandSpec.store],
                details: "The replay runs the next time relay runs on the store; a plan's record points at it.")
        case .cancel:
            CommandSpec(
                name: "cancel", summary: "Cancel an operation that has not finished, and those that depend on it.",
                arguments: ["ID"], options: [CommandSpec.store])
        case .events:
            CommandSpec(
                name: "events", summary: "Print the store's history as JSON lines, or follow a running plan's events.",
                options: [CommandSpec.store, Self.follow],
                details: """
                    A folder's history is in time order. A database's is read a page of operations at a time, oldest \
                    commit first, each operation's events together.
                    """)
        case .demo:
            CommandSpec(
                name: "demo",
                summary: "Run a plan against a local HTTP server with scripted faults: retries, offline, recovery.",
                options: [CommandSpec.store, CommandSpec.json],
                details: """
                    Its store is .relay/demo by default; inspect it afterwards with relay status. Each run empties the \
                    store first, and only a demo store: a folder that relay demo made (it holds a relay-demo file) and \
                    that no running relay holds. Any other folder is refused and left as it is (exit status 3); a new \
                    or empty folder becomes a demo store.
                    """)
        }
    }

    static var overview: String {
        var lines = [
            "relay: runs HTTP calls durably, with their dependencies, and shows what they did.", "", "Commands:",
        ]
        for command in allCases {
            lines.append(
                "  \(command.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(command.spec.summary)")
        }
        lines += ["", "relay COMMAND --help shows a command's arguments and options."]
        return lines.joined(separator: "\n")
    }

    func run(_ arguments: ParsedArguments, store: StoreLocation) async throws -> ExitStatus {
        let json = arguments.has(CommandSpec.json)
        switch self {
        case .run:
            let folder = try store.folder(for: rawValue)
            let file = URL(fileURLWithPath: arguments.arguments[0])
            let parser = PlanParser(
                baseFolder: file.deletingLastPathComponent(), environment: ProcessInfo.processInfo.environment)
            let plan: Plan
            do {
                plan = try parser.parse(file: file)
            } catch {
                throw PlanFileError(file: file.path, error: error)
            }
            return try await PlanRunner(
                plan: plan, store: folder, json: json || !Output.isTerminal,
                environment: ProcessInfo.processInfo.environment
            ).run()
        case .demo:
            return try await Demo(
                store: try store.folder(for: rawValue), storeName: arguments.value(CommandSpec.store) ?? ".relay/demo",
                json: json || !Output.isTerminal
            ).run()
        case .status:
            return try await StoreView.with(store) { view in
                let reader = try await view.summary()
                Output.line(json ? reader.statusJSON() : reader.status())
                return .success
            }
        case .list:
            let state = try arguments.value(Self.state).map { text throws(UsageError) in
                guard let state = OperationQueryState(rawValue: text) else {
                    throw UsageError(message: "--state takes pending, running, completed, skipped, failed or cancelled")
                }
                return state
            }
            let sequence = arguments.value(Self.sequence)
            return try await StoreView.with(store) { view in
                try await view.forEachPage(state: state, sequence: sequence) { reader, entries in
                    for entry in entries { Output.line(json ? reader.json(entry) : reader.line(entry)) }
                }
                return .success
            }
        case .show:
            let text = arguments.arguments[0]
            let wantsBody = arguments.has(Self.body)
            return try await StoreView.with(store) { view in
                let (reader, entry) = try await view.entry(text)
                guard wantsBody else {
                    Output.line(json ? reader.json(entry) : reader.show(entry))
                    return .success
                }
                guard case .completed(let data)? = entry.stored.result else {
                    throw CommandFailure(message: "\(entry.name ?? entry.id.uuidString.lowercased()) has not completed")
                }
                let body = (try? CallResponse(decoding: data).body) ?? data
                FileHandle.standardOutput.write(body)
                return .success
            }
        case .replay:
            return try await StoreControl.replay(arguments.arguments[0], store: store)
        case .cancel:
            return try await StoreControl.cancel(arguments.arguments[0], store: store)
        case .events:
            guard arguments.has(Self.follow) else {
                return try await StoreView.with(store) { view in
                    try await view.printHistory()
                    return .success
                }
            }
            return try await EventFollower.follow(store)
        }
    }
}

/// A plan that cannot run, with its file.
struct PlanFileError: Error, CustomStringConvertible {
    var file: String
    var error: PlanError
    var description: String { "\(file): \(error)" }
}
