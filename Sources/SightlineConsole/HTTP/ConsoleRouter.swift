import Dispatch
import Foundation
import Hummingbird
import Logging
import NIOPosix
import SightlineCore
import SightlineExport
import SightlineHTTP
import SightlineMovie

/// The console's routes: pages, live streams (server-sent events), recordings and the API
/// (docs/console.md).
struct ConsoleRouter {
    let live: LiveSources
    let library: RecordingLibrary?
    let events: EventIndex
    let clips: ClipJobs
    let token: String?
    let runningSources: (any RunningSources)?
    let logger: Logger

    typealias Context = BasicRequestContext

    func router() -> Router<Context> {
        let router = Router(context: Context.self)
        if let token { router.add(middleware: TokenMiddleware(token: token)) }
        if let library {
            // The movie itself, with range requests, for the <video> element.
            let files = RecordingFiles(library: library, logger: logger)
            router.add(middleware: RangeMiddleware(files: files))
            router.add(
                middleware: FileMiddleware(fileProvider: files, urlBasePath: "/media")
                    .withAdditionalMediaType(.videoMp4, mappedToFileExtension: "mov"))
        }
        addPages(to: router)
        addLive(to: router)
        addRecordings(to: router)
        addEvents(to: router)
        addClips(to: router)
        // The live page's control panel and stills: without them (a console of its own), the
        // page asks and hides the panel on the 404.
        if let runningSources { SourceRoutes.add(to: router, sources: runningSources) }
        router.get("/health") { _, _ in
            let sources = live.summaries
            return try Self.json(HealthReport(status: "ok", sources: sources.count, recordings: library != nil))
        }
        if let token { TokenMiddleware.addLogin(to: router, token: token) }
        return router
    }

    private struct HealthReport: Encodable {
        var status: String
        var sources: Int
        var recordings: Bool
    }

    private func addPages(to router: Router<Context>) {
        for (path, page) in [
            ("/", "index.html"), ("/live/:source", "live.html"), ("/recordings", "recordings.html"),
            ("/recordings/:name", "player.html"), ("/events", "events.html"), ("/history/:camera", "history.html"),
        ] {
            router.get(RouterPath(stringLiteral: path)) { _, _ in try Pages.response(page) }
        }
        router.get("/static/:file") { _, context in
            try Pages.response(try context.parameters.require("file"))
        }
    }

    private func addLive(to router: Router<Context>) {
        router.get("/api/sources") { _, _ in try Self.json(live.summaries) }
        router.get("/api/sources/stream") { _, _ in
            Self.events(live.summaryUpdates(), name: "sources")
        }
        router.get("/api/sources/:source/live") { _, context in
            Self.events(live.frames(of: try Self.source(context)), name: "frame")
        }
        router.get("/api/sources/:source/objects") { _, context in
            Self.events(live.objects(of: try Self.source(context)), name: "objects")
        }
        // The source's own H.264 as fragmented MP4, for Media Source Extensions: one long
        // response, a fragment per frame as it comes.
        router.get("/api/sources/:source/video") { _, context in
            Self.stream(live.video(of: try Self.source(context)), type: "video/mp4")
        }
        // The grid's: every tile's video, and every tile's objects and frames, each over one
        // connection (`LiveGrid`).
        router.get("/api/grid/video") { request, _ in
            Self.stream(try Self.grid(request, live).video(), type: "application/octet-stream")
        }
        router.get("/api/grid/stream") { request, _ in
            Self.events(try Self.grid(request, live).messages()) { $0.name }
        }
    }

    private func addRecordings(to router: Router<Context>) {
        router.get("/api/recordings") { _, _ in
            guard let library else { return try Self.json([RecordingSummary]()) }
            return try Self.json(try await Self.offload { library.list() }.map(\.json))
        }
        router.get("/api/recordings/:name") { _, context in
            let (library, name) = try recording(context)
            return try Self.json(try await Self.offload { try library.summary(of: name) }.json)
        }
        router.get("/api/recordings/:name/metadata") { _, context in
            let (library, name) = try recording(context)
            let json = try await Self.offload { try library.metadata(of: name).json }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: json)))
        }
        router.get("/api/recordings/:name/snapshot") { request, context in
            let (library, name) = try recording(context)
            // Both are checked here, before any arithmetic: a time past any clock is refused,
            // not passed on to be turned into ticks.
            let width = try Self.width(request)
            guard let time = request.uri.queryParameters.get("t").flatMap(Double.init),
                (0..<MediaTime.limitSeconds).contains(time)
            else {
                throw HTTPError(.badRequest, message: "snapshot needs ?t=SECONDS, from 0 to 2^32")
            }
            let jpeg = try await Self.offload {
                let metadata = try library.metadata(of: name).player
                return try Snapshot.jpeg(
                    path: try library.path(of: name), at: time, metadata: metadata, maximumWidth: width)
            }
            return Self.jpegResponse(jpeg)
        }
    }

    private func addEvents(to router: Router<Context>) {
        router.get("/api/events") { request, _ in
            let query = try Self.eventQuery(request)
            return try Self.json(try await events.events(matching: query))
        }
        // A camera's recordings as one history: its segments in order, from the index.
        router.get("/api/history/:camera") { request, context in
            let camera = try context.parameters.require("camera")
            let range = try Self.eventQuery(request)
            guard range.camera == nil, range.label == nil, range.name == nil, range.unknown == nil else {
                throw HTTPError(.badRequest, message: "a history takes after, before and limit")
            }
            let segments = try await events.recordings(
                of: camera, after: range.after ?? 0, before: range.before ?? 1e11, limit: range.limit)
            return try Self.json(segments)
        }
        router.get("/api/events/choices") { _, _ in try Self.json(try await events.choices()) }
        // The event's best frame from its recording: around its box (`crop=true`), or whole.
        router.get("/api/events/:id/snapshot") { request, context in
            guard let id = context.parameters.get("id").flatMap(Int64.init), id > 0 else {
                throw HTTPError(.badRequest, message: "an event ID is a positive whole number")
            }
            let crop: Bool
            switch request.uri.queryParameters.get("crop") {
            case nil, "false": crop = false
            case "true": crop = true
            default: throw HTTPError(.badRequest, message: "crop must be true or false")
            }
            let width = try Self.width(request)
            guard let event = try await events.event(id: id) else {
                throw HTTPError(.notFound, message: "no event \(id)")
            }
            guard let library, let name = event.recording, let best = event.best,
                let kind = ObjectKind.all.first(where: { $0.objectName == event.kind })
            else { throw HTTPError(.notFound, message: "event \(id) is in no recording (yet)") }
            let jpeg = try await Self.offload {
                try Snapshot.jpeg(
                    path: try library.path(of: name), at: best, metadata: try library.metadata(of: name).player,
                    maximumWidth: width, around: crop ? (kind, event.objectID) : nil)
            }
            return Self.jpegResponse(jpeg)
        }
    }

    /// The filters of an events or history request, each checked.
    private static func eventQuery(_ request: Request) throws -> EventQuery {
        do {
            return try EventQuery(parameters: request.uri.queryParameters.map { (String($0.key), String($0.value)) })
        } catch {
            throw HTTPError(.badRequest, message: error.description)
        }
    }

    /// A snapshot's `width`, when it has one.
    private static func width(_ request: Request) throws -> Int? {
        try request.uri.queryParameters.get("width").map { text in
            guard let width = Int(text), (16...16384).contains(width) else {
                throw HTTPError(.badRequest, message: "width must be 16 to 16384 pixels")
            }
            return width
        }
    }

    private static func jpegResponse(_ jpeg: [UInt8]) -> Response {
        Response(
            status: .ok, headers: [.contentType: "image/jpeg", .cacheControl: "max-age=3600"],
            body: .init(byteBuffer: ByteBuffer(bytes: jpeg)))
    }

    /// The grid of `?sources=a,b,c`: 1 to 64 source IDs.
    private static func grid(_ request: Request, _ live: LiveSources) throws -> LiveGrid {
        let sources = (request.uri.queryParameters.get("sources") ?? "").split(separator: ",").map(String.init)
        guard (1...64).contains(sources.count), sources.allSatisfy(SourceID.isValid),
            Set(sources).count == sources.count
        else { throw HTTPError(.badRequest, message: "sources must be 1 to 64 different source IDs, comma-separated") }
        return LiveGrid(live: live, sources: sources)
    }

    /// Bytes as they come, in one long response.
    private static func stream(_ chunks: AsyncStream<[UInt8]>, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-store"],
            body: ResponseBody { writer in
                for await chunk in chunks { try await writer.write(ByteBuffer(bytes: chunk)) }
                try await writer.finish(nil)
            })
    }

    /// A source ID from the path, checked as the bus checks it.
    private static func source(_ context: Context) throws -> String {
        let source = try context.parameters.require("source")
        guard SourceID.isValid(source) else {
            throw HTTPError(.badRequest, message: "a source ID is 1-64 letters, digits, '.', '_' or '-'")
        }
        return source
    }

    /// The library and the decoded, checked recording name of a request.
    func recording(_ context: Context) throws -> (RecordingLibrary, String) {
        guard let library else { throw HTTPError(.notFound, message: "this console serves no recordings") }
        let raw = try context.parameters.require("name")
        guard let name = raw.removingPercentEncoding, RecordingLibrary.isPlainName(name) else {
            throw HTTPError(.badRequest, message: RecordingError.badName(raw).description)
        }
        return (library, name)
    }

    /// Runs blocking work (file reading, decoding) off Swift's cooperative threads, and
    /// turns recording errors into HTTP statuses.
    static func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await NIOThreadPool.singleton.runIfActive(work)
        } catch let error as RecordingError {
            switch error {
            case .badName: throw HTTPError(.badRequest, message: error.description)
            case .notFound: throw HTTPError(.notFound, message: error.description)
            case .unreadable: throw HTTPError(.unprocessableContent, message: error.description)
            }
        }
    }

    static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }

    /// A server-sent event stream: one `event: NAME` with a JSON `data:` line per element,
    /// until the stream or the client ends.
    static func events<Element: Encodable & Sendable>(_ stream: AsyncStream<Element>, name: String) -> Response {
        events(stream) { _ in name }
    }

    /// The same, each event named by what it is.
    static func events<Element: Encodable & Sendable>(
        _ stream: AsyncStream<Element>, named name: @escaping @Sendable (Element) -> String
    ) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                let encoder = JSONEncoder()
                try await writer.write(ByteBuffer(string: ": sightline\n\n"))
                for await element in stream {
                    var buffer = ByteBuffer(string: "event: \(name(element))\ndata: ")
                    buffer.writeBytes(try encoder.encode(element))
                    buffer.writeString("\n\n")
                    try await writer.write(buffer)
                }
                try await writer.finish(nil)
            })
    }
}
