import Foundation
import Hummingbird
import SightlineMovie

/// The pages, scripts and styles in `Pages/`, loaded once, and `kinds.js`, which tells the
/// pages' script how to draw each kind of object. Names are looked up in that fixed table,
/// never on disk, so a request cannot reach another file.
enum Pages {
    static let files: [String: (type: String, bytes: [UInt8])] = {
        guard let directory = Bundle.module.url(forResource: "Pages", withExtension: nil),
            let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path)
        else { return [:] }
        let types = [
            "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
            "css": "text/css; charset=utf-8",
            "svg": "image/svg+xml",
        ]
        var files: [String: (String, [UInt8])] = [:]
        for name in names {
            guard let type = types[(name as NSString).pathExtension],
                let data = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
            else { continue }
            files[name] = (type, Array(data))
        }
        files["kinds.js"] = (types["js"]!, kindsScript)
        return files
    }()

    /// `sightline.kinds`: every kind's page description, in `ObjectKind.all`'s order.
    private static var kindsScript: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = (try? encoder.encode(ObjectKind.all.map(\.pageDescription))) ?? Data("[]".utf8)
        return Array("sightline.kinds = \(String(decoding: json, as: UTF8.self));\n".utf8)
    }

    static func response(_ name: String) throws -> Response {
        guard let file = files[name] else { throw HTTPError(.notFound) }
        return Response(
            status: .ok, headers: [.contentType: file.type, .cacheControl: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(bytes: file.bytes)))
    }
}
