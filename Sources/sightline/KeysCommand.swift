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
            return CurveClient(
                keyPair: try CurveKeyPair(contentsOf: key),
                serverPublicKey: try CurveKeyPair.publicKey(contentsOf: server))
        default: throw ValidationError("--curve-key and --server-key go together")
        }
    }
}
