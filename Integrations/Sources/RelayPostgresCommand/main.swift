import Foundation
import RelayCommandLine

// `relay-postgres`: the `relay` command, which reaches a fleet's database too, `--store postgres://…`; `relay` runs
// it for such a URL when it lies beside it.
let stores = ["postgres", "postgresql"].map { scheme in
    CommandLineStore(
        scheme: scheme,
        withQueries: { url, body in try await PostgresStoreAccess(url).withQueries(body) },
        withDataPoint: { url, body in try await PostgresStoreAccess(url).withDataPoint(body) })
}
exit(await RelayCommand.run(Array(CommandLine.arguments.dropFirst()), stores: stores))
