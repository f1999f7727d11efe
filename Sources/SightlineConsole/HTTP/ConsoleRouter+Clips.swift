import Foundation
import Hummingbird
import NIOPosix
import SightlineCore
import SightlineExport
import SightlineMovie

/// Clips from the pages (docs/console.md, "Clips"): made by `ClipJobs` while the page asks
/// how far along they are, then downloaded.
extension ConsoleRouter {
    func addClips(to router: Router<Context>) {
        addRecordingClips(to: router)
        addHistoryClips(to: router)
        addClipDownloads(to: router)
    }

    private func addRecordingClips(to router: Router<Context>) {
        // A clip of a recording, made while the page shows its progress.
        router.post("/api/recordings/:name/clips") { request, context in
            let (library, name) = try recording(context)
            let (range, burnIn) = try Self.clipRequest(request)
            let (path, metadata, summary) = try await Self.offload {
                (try library.path(of: name), try library.metadata(of: name).player, try library.summary(of: name))
            }
            let people = metadata.objects.filter {
                $0.kind == ObjectKind.faces.objectName && $0.start < range.upperBound && $0.end > range.lowerBound
            }.compactMap(\.text)
            let download = ClipName.make(
                camera: RecordingName.sourceIDOrStem(of: name), start: summary.start + range.lowerBound, people: people,
                extension: burnIn ? "mp4" : "mov")
            return try Self.startClip(clips, name: download, burnIn: burnIn) { output, progress in
                let source = try ClipSource(path: path)
                let clipped = try source.checkedRange(
                    from: range.lowerBound, to: min(range.upperBound, source.duration))
                return burnIn
                    ? try BurnIn.export(
                        source, range: clipped, to: output, overwrite: true, options: .init(), progress: progress)
                    : try ClipTrimmer.trim(source, range: clipped, to: output, overwrite: true, progress: progress)
            }
        }
    }

    private func addHistoryClips(to router: Router<Context>) {
        // A clip of a camera's history: `from` and `to` in seconds since 1970, the files it
        // spans joined (trimmed, with their metadata).
        router.post("/api/history/:camera/clips") { request, context in
            let camera = try context.parameters.require("camera")
            let (range, burnIn) = try Self.clipRequest(request)
            guard !burnIn else { throw HTTPError(.badRequest, message: "a clip of a history is trimmed (mode=trim)") }
            guard let library else { throw HTTPError(.notFound, message: "this console serves no recordings") }
            let recordings = try await events.recordings(
                of: camera, after: range.lowerBound, before: range.upperBound, limit: 1000)
            guard !recordings.isEmpty else {
                throw HTTPError(.notFound, message: "no recording of \(camera) in that range")
            }
            var query = EventQuery()
            (query.camera, query.after, query.before, query.limit) = (camera, range.lowerBound, range.upperBound, 1000)
            let people = try await events.events(matching: query).compactMap(\.name)
            let download = ClipName.make(camera: camera, start: range.lowerBound, people: people, extension: "mov")
            return try Self.startClip(clips, name: download, burnIn: false) { output, progress in
                let parts = ClipPart.joined(
                    try recordings.map {
                        (source: try ClipSource(path: try library.path(of: $0.name)), start: $0.start)
                    })
                let starts = recordings.map(\.start)
                let clipped =
                    ClipPart.joinedTime(
                        of: range.lowerBound, in: parts, starts: starts)..<ClipPart.joinedTime(
                        of: range.upperBound, in: parts, starts: starts)
                guard !clipped.isEmpty else { throw ExportError.badOption("the recordings do not reach that range") }
                return try ClipTrimmer.trim(parts, range: clipped, to: output, overwrite: true, progress: progress)
            }
        }
    }

    private func addClipDownloads(to router: Router<Context>) {
        router.get("/api/clips/:id") { _, context in
            guard let status = clips.status(try context.parameters.require("id")) else {
                throw HTTPError(.notFound, message: "no such clip")
            }
            return try Self.json(status)
        }
        router.get("/api/clips/:id/file") { _, context in
            guard let (path, name) = clips.file(try context.parameters.require("id")) else {
                throw HTTPError(.notFound, message: "no such clip, or it is not made yet")
            }
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw HTTPError(.notFound, message: "the clip is gone") }
            return Response(
                status: .ok,
                headers: [
                    .contentType: name.hasSuffix(".mp4") ? "video/mp4" : "video/quicktime",
                    .contentDisposition: "attachment; filename=\"\(name)\"",
                ],
                body: ResponseBody { writer in
                    defer { close(descriptor) }
                    while true {
                        let chunk = try await NIOThreadPool.singleton.runIfActive {
                            var bytes = [UInt8](repeating: 0, count: 1 << 20)
                            let count = bytes.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                            guard count >= 0 else {
                                throw HTTPError(.internalServerError, message: "the clip cannot be read")
                            }
                            return Array(bytes.prefix(count))
                        }
                        if chunk.isEmpty { break }
                        try await writer.write(ByteBuffer(bytes: chunk))
                    }
                    try await writer.finish(nil)
                })
        }
    }

    /// A clip's `from` and `to` (seconds: of a recording, or since 1970) and `mode`, checked.
    private static func clipRequest(_ request: Request) throws -> (range: Range<Double>, burnIn: Bool) {
        let query = request.uri.queryParameters
        func time(_ key: String) throws -> Double {
            guard let value = query.get(key).flatMap(Double.init), (0..<MediaTime.limitSeconds).contains(value) else {
                throw HTTPError(.badRequest, message: "a clip needs \(key)=SECONDS, from 0 to 2^32")
            }
            return value
        }
        let (from, to) = (try time("from"), try time("to"))
        guard to > from else { throw HTTPError(.badRequest, message: "to must come after from") }
        guard to - from <= ClipJobs.longest else { throw HTTPError(.badRequest, message: "a clip is at most an hour") }
        switch query.get("mode") {
        case nil, "trim": return (from..<to, false)
        case "burn-in": return (from..<to, true)
        default: throw HTTPError(.badRequest, message: "mode must be trim or burn-in")
        }
    }

    /// Starts `make` as a clip; `202` with its status.
    private static func startClip(
        _ clips: ClipJobs, name: String, burnIn: Bool,
        make: @escaping @Sendable (String, @escaping ExportProgress) throws -> ExportSummary
    ) throws -> Response {
        do {
            var response = try json(try clips.start(name: name, burnIn: burnIn, make: make))
            response.status = .accepted
            return response
        } catch let error as ClipRequestError {
            throw HTTPError(.tooManyRequests, message: error.description)
        }
    }

}
