import Foundation
import Testing

@testable import RelayCommandLine

/// The relay command's parsing, in process: plans, command lines and secret headers.
@Suite("The relay command's parsing")
struct CommandParsingTests {
    private let parser = PlanParser(
        baseFolder: URL(fileURLWithPath: "/plans"), environment: ["SHOP_TOKEN": "t", "REGION": "eu"])

    @Test("relay: each bad plan is an error that names the field at fault")
    func badPlans() throws {
        let url = "http://127.0.0.1:9/x"
        let cases: [(plan: String, field: String)] = [
            (#"{"calls": [{"name": "a"}]}"#, "calls[0].url"),
            (#"{"calls": [{"name": "a", "url": "\#(url)", "retries": 3}]}"#, "calls[0].retries"),
            (#"{"calls": [{"name": "a", "url": "ftp://host/x"}]}"#, "calls[0].url"),
            (#"{"calls": [{"name": "a", "url": "\#(url)", "method": "FETCH"}]}"#, "calls[0].method"),
            (#"{"calls": [{"name": "a", "url": "\#(url)", "dependsOn": ["b"]}]}"#, "calls[0].dependsOn[0]"),
            (#"{"calls": [{"name": "a", "url": "\#(url)", "dependsOn": ["a"]}]}"#, "calls[0].dependsOn[0]"),
            (
                #"{"calls": [{"name": "a", "url": "\#(url)", "dependsOn": ["b"]}, {"name": "b", "url": "\#(url)", "dependsOn": ["a"]}]}"#,
                "calls[1].dependsOn"
            ),
            (
                #"{"calls": [{"name": "a", "url": "\#(url)", "headers": {"Authorization": "x"}}]}"#,
                "calls[0].headers.Authorization"
            ),
            (
                #"{"calls": [{"name": "a", "url": "\#(url)", "secretHeaders": {"X-Key": "plain"}}]}"#,
                "calls[0].secretHeaders.X-Key"
            ),
            (#"{"calls": [{"name": "a", "url": "\#(url)", "retry": {"attempts": 0}}]}"#, "calls[0].retry.attempts"),
            (
                #"{"calls": [{"name": "a", "url": "\#(url)", "retry": {"initialDelay": 5, "maximumDelay": 1}}]}"#,
                "calls[0].retry.maximumDelay"
            ),
            (#"{"calls": [{"name": "a", "url": "\#(url)", "timeout": 0}]}"#, "calls[0].timeout"),
            (
                #"{"calls": [{"name": "a", "url": "\#(url)", "body": "x", "bodyFile": "/etc/hosts"}]}"#,
                "calls[0].bodyFile"
            ),
            (#"{"calls": [{"name": "a", "url": "\#(url)", "sequence": "nowhere"}]}"#, "calls[0].sequence"),
            (#"{"calls": [{"name": "a", "url": "\#(url)"}, {"name": "a", "url": "\#(url)"}]}"#, "calls[1].name"),
            (#"{"calls": [{"name": "a", "url": 7}]}"#, "calls[0].url"),
            (#"{"sequences": [{"name": "s", "bunchSize": 0}], "calls": []}"#, "sequences[0].bunchSize"),
            (#"{"sequences": [{"name": "s", "algorithm": "fifo"}], "calls": []}"#, "sequences[0].algorithm"),
            (#"{"calls": []}"#, "calls"),
            (#"{"calls": [}"#, "plan"),
            (#"[1]"#, "plan"),
            (#"{"plan": 1, "calls": []}"#, "plan"),
        ]
        for testCase in cases {
            let error = #expect(throws: PlanError.self, "\(testCase.plan)") {
                try parser.parse(Data(testCase.plan.utf8), defaultName: "p")
            }
            #expect(error?.field == testCase.field, "\(testCase.plan): \(String(describing: error))")
        }
        // A secret's variable is checked for the calls a run will send, once it knows which.
        let secret = try parser.parse(
            Data(#"{"calls": [{"name": "a", "url": "\#(url)", "secretHeaders": {"X-Key": "$UNSET"}}]}"#.utf8),
            defaultName: "p")
        let missing = #expect(throws: PlanError.self) { try secret.checkSecrets(of: ["a"], in: [:]) }
        #expect(missing?.field == "calls[0].secretHeaders.X-Key")
        #expect(throws: Never.self) { try secret.checkSecrets(of: [], in: [:]) }
    }

    @Test("relay: a plan reads every field, with defaults, and paths relative to its folder")
    func goodPlan() throws {
        let plan = try parser.parse(
            Data(
                #"""
                {"name": "sync", "sequences": [{"name": "api", "bunchSize": 4, "algorithm": "commitGraph"}],
                 "calls": [{"name": "a", "url": "https://h/a", "sequence": "api"},
                           {"name": "b", "method": "post", "url": "https://h/b", "body": "{}", "download": "out/b",
                            "secretHeaders": {"Authorization": "Bearer ${SHOP_TOKEN}"}, "dependsOn": ["a"],
                            "priority": 3, "retry": {"attempts": 2}, "timeout": 1.5}]}
                """#.utf8), defaultName: "ignored")
        #expect(plan.name == "sync")
        #expect(plan.sequences == [Plan.Sequence(name: "api", bunchSize: 4, algorithm: "commitGraph")])
        #expect(plan.calls[0].method == "GET")
        #expect(plan.calls[1].method == "POST")
        #expect(plan.calls[1].download == "/plans/out/b")
        #expect(plan.calls[1].retry == Plan.Retry(attempts: 2, initialDelay: 1, maximumDelay: 60))
        #expect(plan.calls[1].timeout == 1.5)
        let unnamed = try parser.parse(
            Data(#"{"calls": [{"name": "a", "url": "https://h/a"}]}"#.utf8), defaultName: "f")
        #expect(unnamed.name == "f")
        #expect(unnamed.digest != plan.digest)
        #expect(
            try parser.parse(Data(#"{"calls": [{"url": "https://h/a", "name": "a"}]}"#.utf8), defaultName: "f").digest
                == unnamed.digest)
    }

    @Test("relay: secret headers expand $NAME and ${NAME} from the environment at send time")
    func secretHeaders() throws {
        let authorizer = EnvironmentAuthorizer(environment: ["SHOP_TOKEN": "t0k", "REGION": "eu"])
        #expect(try authorizer.expand("Bearer ${SHOP_TOKEN}", header: "Authorization") == "Bearer t0k")
        #expect(try authorizer.expand("$REGION-$SHOP_TOKEN costs $5", header: "X") == "eu-t0k costs $5")
        #expect(EnvironmentAuthorizer.variables(in: "a ${B} $C $ ${") == ["B", "C"])
        #expect(throws: (any Error).self) { try authorizer.expand("$MISSING", header: "X") }
    }

    @Test("relay: command lines parse against each command's options, and each command has help")
    func commandLines() throws {
        let run = try ParsedArguments(["plan.json", "--store=dir", "--json"], for: Command.run.spec)
        #expect(run.arguments == ["plan.json"])
        #expect(run.value(CommandSpec.store) == "dir")
        #expect(run.has(CommandSpec.json))
        let list = try ParsedArguments(["--state", "failed", "--sequence", "api"], for: Command.list.spec)
        #expect(list.value(Command.state) == "failed")
        #expect(list.value(Command.sequence) == "api")
        #expect(try ParsedArguments(["--help"], for: Command.show.spec).wantsHelp)
        for words in [["--nope"], ["--store"], ["a", "b"], ["--json=1"]] {
            #expect(throws: UsageError.self, "\(words)") { try ParsedArguments(words, for: Command.status.spec) }
        }
        #expect(throws: UsageError.self) { try ParsedArguments([], for: Command.run.spec) }
        for command in Command.allCases {
            #expect(command.spec.help.contains("Usage: relay \(command.rawValue)"))
            #expect(command.spec.help.contains("--help"))
            #expect(Command.overview.contains("  \(command.rawValue)"))
        }
    }
}
