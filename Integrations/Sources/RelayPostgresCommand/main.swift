import Foundation
import RelayCommandLine

// `relay-postgres`: the `relay` command, which reaches a fleet's database too, `--store postgres://…`; `relay` runs it
// for such a URL when it lies beside it.
let stores = ["postgres", "postgresql"].map { scheme in
    CommandLineStore(
        scheme: scheme,
        read: { url in try await PostgresStoreAccess(url).contents() },
        withDataPoint: { url, body in try await PostgresStoreAccess(url).withDataPoint(body) })
}
exit(await RelayCommand.run(Array(CommandLine.arguments.dropFirst()), stores: stores))
