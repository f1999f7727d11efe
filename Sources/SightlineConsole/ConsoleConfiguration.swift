import SightlineBus
import SightlineCore
import SightlineHTTP

/// Everything `sightline console` needs to know.
package struct ConsoleConfiguration: Sendable {
    /// Where the HTTP server listens: loopback unless `token` or `allowRemote`.
    package var host = "127.0.0.1"
    /// 0 picks a free port (tests); `onListening` says which.
    package var port = 8080
    /// Sources or a broker's backend to subscribe to; none: recordings only.
    package var endpoints: [Endpoint] = []
    package var curve: CurveClient?
    /// Directories of recordings to list and play; none: live view only.
    package var recordingDirectories: [String] = []
    /// With a token, every page and API call needs it: `Authorization: Bearer TOKEN`, or the
    /// cookie the login form sets.
    package var token: String?
    /// Serve beyond loopback without a token.
    package var allowRemote = false
    /// A source silent this long shows as stopped.
    package var silenceLimit: Duration = .seconds(15)
    /// The event index's SQLite file; nil: `.sightline-events.sqlite` in the first recordings
    /// directory, or in memory when there is none.
    package var eventIndexPath: String?
    /// How often the index looks for new, grown and deleted recordings.
    package var indexInterval: Duration = .seconds(5)
    /// The sources, when the console runs in the process that runs them (`serve`): their
    /// cameras' controls (the live page's panel) and latest pictures. nil: neither
    /// (`sightline console` on its own).
    package var runningSources: (any RunningSources)?

    /// Where the event index is kept; nil: in memory.
    package var resolvedEventIndexPath: String? {
        eventIndexPath ?? recordingDirectories.first.map { $0 + "/.sightline-events.sqlite" }
    }

    package init() {}

    /// Whether only this machine can reach `host`.
    package var listensOnLoopbackOnly: Bool { ListenAddress.isLoopback(host) }

    /// Refuses to listen beyond loopback without a token or an explicit `allowRemote`, and
    /// tokens a cookie cannot carry or a guess could find.
    package func validate() throws {
        guard (0...65535).contains(port) else { throw SightlineError.invalidArgument("port \(port) is not 0-65535") }
        if let token {
            let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".unicodeScalars)
            guard token.unicodeScalars.count >= 16, token.unicodeScalars.allSatisfy(allowed.contains) else {
                throw SightlineError.invalidArgument(
                    "the token must be at least 16 letters, digits, '-', '.', '_' or '~' (try: openssl rand -hex 16)")
            }
        }
        guard listensOnLoopbackOnly || token != nil || allowRemote else {
            throw SightlineError.invalidArgument(
                "listening on \(host) lets other machines in: give --token, or --insecure to serve without one")
        }
    }
}
