import Foundation
import Relay
import RelayPostgres
import RelayTesting
import Testing

/// A fleet whose database server restarts mid-run.
///
/// The restart ends every connection of every test running at the time, so this suite runs alone, and only when
/// `RELAY_POSTGRES_RESTART` holds the shell command that restarts the server `RELAY_POSTGRES_URL` names (CI sets both).
@Suite(
    "S31 a fleet whose database server restarts", .timeLimit(.minutes(2)),
    .enabled(
        if: ProcessInfo.processInfo.environment["RELAY_POSTGRES_RESTART"] != nil,
        "RELAY_POSTGRES_RESTART names no command that restarts the server"))
struct PostgresRestartTests {
    private typealias Fleet = PostgresFleetTests
    private typealias Outage = PostgresFleetOutageTests

    static var command: String? { ProcessInfo.processInfo.environment["RELAY_POSTGRES_RESTART"] }

    /// Restarts the server, and returns once it accepts connections again.
    private static func restart() async throws {
        // The restarted server lives on: it must hold none of the descriptors this process shares with its child,
        // one of which tells this process that the child has exited. Only the standard three pass to the command.
        let onlyStandard = """
            for fd in /proc/$$/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; exec /bin/sh -c "$1"
            """
        let restart = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/bash"),
            arguments: ["-c", onlyStandard, "restart", command ?? "false"])
        #expect(await restart.closeInput() == 0, "the restart command failed")
    }

    @Test("S31: the server restarted mid-run: nothing acknowledged is lost, work resumes, and LISTEN is back")
    func restarted() async throws {
        // No polling to make up for a notification missed: only LISTEN, made again, settles handles here.
        var options = Fleet.options()
        options.pollInterval = .seconds(3600)
        try await Fleet.withTwoProcesses(options: options) { point, database in
            var handles = try await point.enqueue(Outage.commit())
            try await Self.restart()
            handles += try await Outage.enqueue(Outage.commit(), on: point)
            let ranBy = try await Fleet.ranBy(handles)
            #expect(ranBy == ["A": 20, "B": 20])
            #expect(try await Outage.unfinished(in: database) == 0)
        }
    }
}
