import ArgumentParser
import Foundation
import SightlineBus
import SightlineConsole
import SightlineCore

struct ConsoleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "Serve a browser console: live view with boxes, recordings played with their metadata.",
        discussion: """
            Subscribes to sources (or a broker's backend) like `events`, and serves on \
            http://127.0.0.1:8080 by default: / lists the sources, /live/<source> shows its \
            newest frames with the faces and codes of each frame (run the source with \
            --frames jpeg), /recordings lists the movies in --recordings and plays each with \
            the boxes drawn from its own metadata tracks, /events lists every face, code and \
            object seen, live or recorded, with filters (/events?name=NAME: when was this \
            person here). docs/console.md has the API.

            Examples:
              sightline console --connect tcp://127.0.0.1:5560 --recordings recordings
              sightline console --recordings /srv/rec                       # recordings only
              sightline console --listen 0.0.0.0:8080 --token-file console.token --recordings rec
            """)

    @Option(help: "Where to listen, HOST:PORT. Beyond loopback it needs --token or --insecure.")
    var listen = "127.0.0.1:8080"

    @Option(help: "A source or broker backend to subscribe to; repeat for several.")
    var connect: [String] = []

    @Option(help: "A directory of recordings to list and play; repeat for several.")
    var recordings: [String] = []

    @Option(help: "Require this token (16+ characters): Authorization: Bearer, or the login form's cookie.")
    var token: String?

    @Option(help: "Read the token from this file (keeps it out of the process list).")
    var tokenFile: String?

    @Flag(help: "Listen beyond loopback without a token.")
    var insecure = false

    @Option(help: "Show a source as stopped after this many seconds without a message from it.")
    var staleAfter = 15.0

    @Option(
        help: """
            The event index (SQLite) behind /events. Default: .sightline-events.sqlite in the first \
            --recordings directory, or in memory without one.
            """)
    var eventIndex: String?

    @OptionGroup var keys: ClientKeyOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        var configuration = ConsoleConfiguration()
        (configuration.host, configuration.port) = try Self.parseListen(listen)
        configuration.endpoints = try connect.map(Endpoint.init)
        configuration.curve = try keys.client()
        configuration.recordingDirectories = recordings
        configuration.token = try readToken()
        configuration.allowRemote = insecure
        configuration.silenceLimit = try OptionValues.duration(staleAfter, option: "--stale-after")
        configuration.eventIndexPath = eventIndex
        guard !connect.isEmpty || !recordings.isEmpty else {
            throw ValidationError("give --connect (live sources), --recordings (a directory), or both")
        }
        let console = try Console(configuration: configuration, logger: logger)
        try await runServices(console.services, logger: logger)
        Bus.finish()
    }

    private func readToken() throws -> String? {
        switch (token, tokenFile) {
        case (nil, nil): return nil
        case (let token?, nil): return token
        case (nil, let file?): return try readSecret(file, option: "--token-file")
        default: throw ValidationError("give --token or --token-file, not both")
        }
    }

    static func parseListen(_ text: String) throws -> (String, Int) {
        guard let address = ListenAddress(text) else {
            throw ValidationError("--listen '\(text)' is not HOST:PORT, for example 127.0.0.1:8080")
        }
        return (address.host, address.port)
    }
}
