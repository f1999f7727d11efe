import Foundation

/// The clips that ship with Sightline, built by tools/make-media.sh from photos in PyPI
/// packages (see that script for sources and licences).
public enum SampleMedia {
    /// 640x480, 30 fps, 300 frames (10 s), H.264.
    public static var faces640x480: URL { url("faces_640x480.mp4") }
    /// The same camera path at 1280x720.
    public static var faces1280x720: URL { url("faces_1280x720.mp4") }
    /// 640x480, 30 fps, 240 frames (8 s): generated QR, EAN-13, EAN-8 and Code 128 symbols
    /// over a pan across a photo, each on known frames (tools/make-barcode-media.py).
    public static var barcodes640x480: URL { url("barcodes_640x480.mp4") }

    static func url(_ name: String) -> URL {
        Bundle.module.resourceURL!.appendingPathComponent("Media").appendingPathComponent(name)
    }
}
