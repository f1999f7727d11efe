import Foundation
import Hummingbird
import SightlineHTTP

/// Reads a `/media/<name>` request's `Range` header as RFC 9110 has it (`ByteRanges`) and
/// hands `FileMiddleware` behind it one plain `first-last` range, none, or answers 416
/// itself: `FileMiddleware` alone reads `bytes=-1` as the first two bytes and answers ranges
/// past the end with 206 (one with a negative `Content-Length`).
struct RangeMiddleware<Context: RequestContext>: RouterMiddleware {
    let files: RecordingFiles

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let header = request.headers[.range], request.uri.path.hasPrefix("/media/"),
            let id = files.getFileIdentifier(
                String(request.uri.path.dropFirst("/media".count)).removingPercentEncoding ?? ""),
            let size = (try? FileManager.default.attributesOfItem(atPath: id))?[.size] as? Int
        else {
            return try await next(request, context)
        }
        var head = request.head
        switch ByteRanges(header: header, size: size) {
        case .whole:
            head.headerFields[.range] = nil
        case .range(let range):
            head.headerFields[.range] = "bytes=\(range.lowerBound)-\(range.upperBound)"
        case .unsatisfiable:
            // A range that no longer fits a changed file is ignored when If-Range says so.
            guard request.headers[.ifRange] == nil else {
                head.headerFields[.range] = nil
                break
            }
            return Response(
                status: .rangeNotSatisfiable,
                headers: [
                    .contentRange: ByteRanges.unsatisfiedContentRange(size: size), .acceptRanges: "bytes",
                    .contentLength: "0",
                ])
        }
        return try await next(Request(head: head, body: request.body), context)
    }
}
