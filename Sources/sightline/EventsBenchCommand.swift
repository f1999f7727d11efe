import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import SightlineConsole

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

struct EventsBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration.bench(
        "events",
        abstract: "Measure the console's search by person in an event index of 100,000 events.",
        prints: """
            Prints, measured in the same run on an index made for it (cameras, people, unknown
            faces and codes spread over 90 days):
              fill     events written to a new index file, per second
              plan     how SQLite answers a search by name (it must seek the name index)
              http     /api/events?name=NAME from a running console, over loopback: median and
                       99th percentile of the searches (one person's newest 100 events across
                       every camera and day, as the events page asks)
              query    the same search in process, without HTTP
              scan     the same search with no index used (every row read), and the index's
                       speed-up as a ratio of it
            """)

    @Option(help: "Events in the index.")
    var events = 100_000

    @Option(help: "Searches of each kind; each asks for a different person.")
    var searches = 200

    func run() async throws {
        guard (1000...10_000_000).contains(events), (10...100_000).contains(searches) else {
            throw ValidationError("--events must be 1000 to 10,000,000 and --searches 10 to 100,000")
        }
        let scratch = try TemporaryFolder()
        let path = scratch.path + "/events.sqlite"
        var logger = Logger(label: "bench")
        logger.logLevel = .warning
        let index = try EventIndex(path: path, logger: logger)
        let people = (1...300).map { String(format: "Person %03d", $0) }
        let made = Self.events(events, people: people)
        let recordings = made.map {
            IndexedRecording(name: $0.recording!, camera: $0.camera, start: $0.start - $0.t!, duration: 30, size: 0)
        }
        let fill = try BenchMedia.timed { try index.insert(recordings, made) }
        print(String(format: "fill     %d events in %.2f s: %.0f events/s", events, fill, Double(events) / fill))
        var query = EventQuery()
        query.name = people[0]
        print("plan     \(try index.plan(of: query))")

        var generator = SystemRandomNumberGenerator()
        let asked = (0..<searches).map { _ in people.randomElement(using: &generator)! }
        let http = try await Self.overHTTP(path: path, names: asked, logger: logger)
        var inProcess: [Double] = []
        var scans: [Double] = []
        for name in asked {
            query.name = name
            let started = ContinuousClock.now
            let found = try await index.events(matching: query)
            inProcess.append((ContinuousClock.now - started).milliseconds)
            let scanStarted = ContinuousClock.now
            let scanned = try index.eventsReadingEveryRow(named: name, limit: query.limit)
            scans.append((ContinuousClock.now - scanStarted).milliseconds)
            guard found.map(\.id) == scanned.map(\.id) else {
                throw ValidationError("the indexed search and the scan disagree for \(name)")
            }
        }
        print(Self.line("http", http) + "  (target: under 100 ms)")
        print(Self.line("query", inProcess))
        print(Self.line("scan", scans) + String(format: "  index = %.0f x faster", median(scans) / median(inProcess)))
    }

    private static func line(_ label: String, _ milliseconds: [Double]) -> String {
        String(
            format: "%@ median %7.3f ms  p99 %7.3f ms", label.padding(toLength: 8, withPad: " ", startingAt: 0),
            median(milliseconds), percentile(milliseconds, 0.99))
    }

    /// Two faces in five named, one in ten a code, over 90 days of 12 cameras.
    private static func events(_ count: Int, people: [String]) -> [IndexedEvent] {
        var generator = SystemRandomNumberGenerator()
        let end = Date().timeIntervalSince1970
        return (0..<count).map { n in
            let start = end - Double.random(in: 0..<(90 * 86_400), using: &generator)
            let camera = "cam\(Int.random(in: 1...12, using: &generator))"
            let roll = Int.random(in: 0..<10, using: &generator)
            let recording = "\(camera)-\(n).mov"
            return IndexedEvent(
                camera: camera, label: roll == 0 ? "code" : "face",
                name: roll > 0 && roll <= 4 ? people.randomElement(using: &generator) : nil,
                kind: roll == 0 ? "code" : "face", objectID: n, start: start, end: start + 4, recording: recording,
                t: Double.random(in: 0..<30, using: &generator), text: roll == 0 ? "CODE-\(n)" : nil)
        }
    }

    /// Each name searched through a console serving the index, one request at a time.
    private static func overHTTP(path: String, names: [String], logger: Logger) async throws -> [Double] {
        var configuration = ConsoleConfiguration()
        configuration.port = 0
        configuration.eventIndexPath = path
        let (ports, announce) = AsyncStream.makeStream(of: Int.self)
        let console = try Console(configuration: configuration, logger: logger, onListening: { announce.yield($0) })
        let group = ServiceGroup(configuration: .init(services: console.services, logger: logger))
        return try await withThrowingTaskGroup(of: [Double].self) { tasks in
            tasks.addTask {
                try await group.run()
                return []
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw ValidationError("the console did not start") }
            var times: [Double] = []
            for name in names {
                let query = name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name
                let url = URL(string: "http://127.0.0.1:\(port)/api/events?name=\(query)")!
                let started = ContinuousClock.now
                let (data, response) = try await URLSession.shared.data(from: url)
                times.append((ContinuousClock.now - started).milliseconds)
                guard (response as? HTTPURLResponse)?.statusCode == 200, !data.isEmpty else {
                    throw ValidationError("the console refused the search for \(name)")
                }
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return times
        }
    }
}
