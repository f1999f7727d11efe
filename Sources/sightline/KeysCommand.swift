import ArgumentParser
import Foundation
import SightlineBus

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Manage the CURVE keys that authenticate and encrypt network endpoints.",
        subcommands: [Generate.self])

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a key pair: NAME.key (secret, mode 600) and NAME.pub (to hand out).",
            discussion: """
                Examples, for a camera host and a recording host:
                  sightline keys generate --name server        # on the publisher
                  sightline keys generate --name recorder      # on each subscriber
                  # copy recorder.pub into the publisher's allow-list directory, server.pub to subscribers
                  sightline run --publish tcp://0.0.0.0:5560 --curve-key keys/server.key --allow keys/clients/
                  sightline record --connect tcp://camera:5560 --curve-key keys/recorder.key --server-key keys/server.pub
                """)

        @Option(help: "Directory for the files.")
        var out = "keys"

        @Option(help: "Base name of the files.")
        var name: String

        func run() throws {
            let pair = try CurveKeyPair.generate()
            try pair.write(to: out, name: name)
            print("\(out)/\(name).key\n\(out)/\(name).pub")
        }
    }
}

/// CURVE options of commands that subscribe.
struct ClientKeyOptions: ParsableArguments {
    @Option(help: "This subscriber's key pair (a .key file from `sightline keys generate`), for a CURVE endpoint.")
    var curveKey: String?

    @Option(help: "The publisher's public key (.pub), with --curve-key.")
    var serverKey: String?

    func client() throws -> CurveClient? {
        switch (curveKey, serverKey) {
        case (nil, nil): return nil
        case (let key?, let server?):
            return try CurveClient(keyFile: key, serverKeyFile: server)
        default: throw ValidationError("--curve-key and --server-key go together")
        }
    }
}

extension CurveClient {
    /// This side's key pair file (.key) and the server's public key file (.pub).
    init(keyFile: String, serverKeyFile: String) throws {
        self.init(
            keyPair: try CurveKeyPair(contentsOf: keyFile),
            serverPublicKey: try CurveKeyPair.publicKey(contentsOf: serverKeyFile))
    }
}

extension CurveServer {
    /// The server's key pair file (.key) and its allow-list: a .pub file or a directory of them.
    init(keyFile: String, allow: String) throws {
        self.init(
            keyPair: try CurveKeyPair(contentsOf: keyFile), allowedClients: try CurveServer.allowList(from: allow))
    }
}
