import Foundation

/// The clips that ship with Sightline, built by tools/make-media.sh from photos in PyPI
/// packages (see that script for sources and licences).
package enum SampleMedia {
    /// 640x480, 30 fps, 300 frames (10 s), H.264.
    package static var faces640x480: URL { url("faces_640x480.mp4") }
    /// The same camera path at 1280x720.
    package static var faces1280x720: URL { url("faces_1280x720.mp4") }
    /// 640x480, 30 fps, 240 frames (8 s): generated QR, EAN-13, EAN-8 and Code 128 symbols
    /// over a pan across a photo, each on known frames (tools/make-barcode-media.py).
    package static var barcodes640x480: URL { url("barcodes_640x480.mp4") }
    /// Which code is on which frame of `barcodes640x480`, and where (see `BarcodeTruth`).
    package static var barcodes640x480Truth: URL { url("barcodes_640x480.truth.json") }

    static func url(_ name: String) -> URL {
        Bundle.module.resourceURL!.appendingPathComponent("Media").appendingPathComponent(name)
    }
}

/// The truth file of the barcode sample, written by tools/make-barcode-media.py with it.
package struct BarcodeTruth: Decodable, Sendable {
    package struct Code: Decodable, Sendable {
        /// Sightline's name of the symbology (`MachineReadableCodeType`'s raw value).
        package let type: String
        package let text: String
        /// The first and last frame (0-based) the code is on, whole.
        package let first: Int
        package let last: Int
        /// Frame number → [x, y, width, height] of the pasted symbol with its quiet zone.
        package let boxes: [String: [Int]]
    }
    package let width: Int
    package let height: Int
    package let frames: Int
    package let fps: Int
    package let codes: [Code]

    package static func load() throws -> BarcodeTruth {
        try JSONDecoder().decode(BarcodeTruth.self, from: Data(contentsOf: SampleMedia.barcodes640x480Truth))
    }

    /// The codes on frame `n`, as `type:text`.
    package func codes(onFrame n: Int) -> Set<String> {
        Set(codes.filter { $0.first <= n && n <= $0.last }.map { "\($0.type):\($0.text)" })
    }
}
