import Foundation
import RelayCommandLine

// `relay` on folders; a package that brings another store builds its own command on RelayCommandLine.
exit(await RelayCommand.run(Array(CommandLine.arguments.dropFirst()), stores: []))
