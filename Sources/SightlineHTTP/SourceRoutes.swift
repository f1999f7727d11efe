import Foundation
import Hummingbird
import SightlineCapture
import SightlineCore

/// A request refused: its status and one line, answered as `{"error": LINE}`.
package struct HTTPRefusal: Error, Sendable {
    package var status: HTTPResponse.Status
    package var line: String

    package init(_ status: HTTPResponse.Status, _ line: String) { (self.status, self.line) = (status, line) }

    /// The answer `body` gives, or the refusal it throws.
    package static func answer(_ body: () throws -> Response) throws -> Response {
        do {
            return try body()
        } catch let refused as HTTPRefusal {
            return refused.response
        }
    }

    package var response: Response {
        var response = (try? HTTPRefusal.json(["error": line])) ?? Response(status: status)
        response.status = status
        if status == .unauthorized { response.headers[.wwwAuthenticate] = "Bearer realm=\"sightline\"" }
        return response
    }

    /// `value` as a 200 JSON answer, keys sorted.
    package static func json(_ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
    }
}

/// The sources a process runs, as its HTTP servers offer them: what `SourceRoutes` asks.
/// Each throws an `HTTPRefusal` saying why it cannot answer (no such source, not running,
/// not a camera, no frame yet). Any thread.
package protocol RunningSources: Sendable {
    func cameraControls(ofSource id: String) throws -> CameraControls
    /// The newest frame as a JPEG no taller than `height`; with `boxes`, the newest analysed
    /// frame with its objects drawn in.
    func latestPicture(ofSource id: String, boxes: Bool, height: Int?) throws -> [UInt8]
}

/// What the operations server and the console (in `serve`) offer about each running source:
/// - `GET /api/sources/<id>/controls`: its camera's controls with their values now;
/// - `PUT` there with a JSON object `{"NAME": VALUE, …}`: sets them together (checked first:
///   nothing changes when one is refused, and the answer is 400 with the line saying why),
///   logs the change and publishes it as a `status`, and keeps them across reconnects;
/// - `GET /api/sources/<id>/latest.jpg`: the newest frame as a JPEG (`?boxes=1` draws the
///   faces and codes of the newest analysed frame, `?h=HEIGHT` scales it down), as
///   `AVCapturePhotoOutput` takes a picture from a running session.
package enum SourceRoutes {
    /// A request body larger than this is refused: a control setting is a few bytes.
    package static let maximumBody = 16 * 1024
    /// The largest height `?h=` asks for.
    package static let maximumHeight = 4320

    /// `authorized` says whether a request may ask (the operations server's token; the
    /// console checks its own before any route).
    package static func add<Context: RequestContext>(
        to router: Router<Context>, sources: some RunningSources,
        authorized: @escaping @Sendable (Request) -> Bool = { _ in true }
    ) {
        @Sendable func camera(_ request: Request, _ context: Context) throws -> CameraControls {
            guard authorized(request) else { throw HTTPRefusal(.unauthorized, "a bearer token is needed") }
            return try sources.cameraControls(ofSource: context.parameters.get("source") ?? "")
        }
        router.get("/api/sources/:source/controls") { request, context -> Response in
            try HTTPRefusal.answer {
                let camera = try camera(request, context)
                return try HTTPRefusal.json(Listing(device: camera.path, controls: try list(camera)))
            }
        }
        router.put("/api/sources/:source/controls") { request, context -> Response in
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: maximumBody)
            } catch {
                return HTTPRefusal(.contentTooLarge, "the body is over \(maximumBody) bytes").response
            }
            return try HTTPRefusal.answer {
                let camera = try camera(request, context)
                let requests = try parse(Data(buffer: body))
                do {
                    let list = try camera.set(requests, by: "PUT \(request.uri.path)")
                    return try HTTPRefusal.json(Listing(device: camera.path, controls: list))
                } catch let error as SightlineError {
                    throw HTTPRefusal(.badRequest, "\(error)")
                }
            }
        }
        router.get("/api/sources/:source/latest.jpg") { request, context -> Response in
            try HTTPRefusal.answer {
                guard authorized(request) else { throw HTTPRefusal(.unauthorized, "a bearer token is needed") }
                let boxes = ["1", "true", "yes"].contains(request.uri.queryParameters.get("boxes") ?? "")
                var height: Int?
                if let text = request.uri.queryParameters.get("h") {
                    guard let value = Int(text), (16...maximumHeight).contains(value) else {
                        throw HTTPRefusal(.badRequest, "h must be a height of 16 to \(maximumHeight) pixels")
                    }
                    height = value
                }
                let jpeg = try sources.latestPicture(
                    ofSource: context.parameters.get("source") ?? "", boxes: boxes, height: height)
                return Response(
                    status: .ok, headers: [.contentType: "image/jpeg", .cacheControl: "no-store"],
                    body: .init(byteBuffer: ByteBuffer(bytes: jpeg)))
            }
        }
    }

    struct Listing: Encodable {
        var device: String
        var controls: [V4L2Control]
    }

    private static func list(_ camera: CameraControls) throws -> [V4L2Control] {
        do {
            return try camera.list()
        } catch {
            throw HTTPRefusal(.serviceUnavailable, "\(error)")
        }
    }

    private struct Value: Decodable {
        var text: String

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let flag = try? container.decode(Bool.self) {
                text = flag ? "1" : "0"
            } else if let number = try? container.decode(Int64.self) {
                text = String(number)
            } else {
                text = try container.decode(String.self)
            }
        }
    }

    /// The body of a PUT: a JSON object of 1-64 controls, each a whole number, a boolean or
    /// a string (a menu item, a mode name).
    package static func parse(_ data: Data) throws -> [V4L2ControlRequest] {
        guard let object = try? JSONDecoder().decode([String: Value].self, from: data), !object.isEmpty,
            object.count <= 64
        else {
            throw HTTPRefusal(
                .badRequest,
                "the body must be a JSON object of 1-64 controls, each a whole number, a boolean or a string, as {\"brightness\": 140}"
            )
        }
        return try object.sorted { $0.key < $1.key }.map { name, value in
            do {
                return try V4L2ControlRequest("\(name)=\(value.text)")
            } catch {
                throw HTTPRefusal(.badRequest, "\(error)")
            }
        }
    }
}
