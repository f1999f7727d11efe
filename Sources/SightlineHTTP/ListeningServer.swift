import Glibc
import NIOCore
import ServiceLifecycle
import SightlineCore

/// An HTTP server whose failure to listen names the address: NIO's own error says
/// `bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)` and not where.
package struct ListeningServer<Server: Service>: Service {
    private let server: Server
    private let address: String

    package init(_ server: Server, host: String, port: Int) {
        self.server = server
        address = "\(host):\(port)"
    }

    package func run() async throws {
        do {
            try await server.run()
        } catch let error as IOError where [EADDRINUSE, EACCES, EADDRNOTAVAIL].contains(error.errnoCode) {
            let reason =
                switch error.errnoCode {
                case EADDRINUSE: "the address is in use (another program listens there; pick another port)"
                case EACCES: "permission denied (ports below 1024 need privileges)"
                default: "no interface of this machine has that address"
                }
            throw SightlineError.invalidArgument("cannot listen on \(address): \(reason)")
        }
    }
}
