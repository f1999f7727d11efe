import CZXing
import Dispatch
import SightlineCore
import Synchronization

/// A barcode or 2D code as the reader reports it, in pixels of the image it was given.
package struct BarcodeDetection: Sendable {
    package var type: MachineReadableCodeType
    package var text: String
    /// Top-left, top-right, bottom-right, bottom-left, in the symbol's own orientation.
    package var corners: [(x: Int, y: Int)]

    /// The code as a metadata object (ID 0 until a tracker gives it one).
    package func object(imageWidth: Int, imageHeight: Int, time: MediaTime, duration: MediaTime?)
        -> MachineReadableCodeObject
    {
        MachineReadableCodeObject(
            codeID: 0, type: type, stringValue: text,
            corners: corners.map {
                NormalizedPoint(x: Double($0.x) / Double(imageWidth), y: Double($0.y) / Double(imageHeight))
            }, time: time, duration: duration)
    }
}

/// zxing-cpp's multi-format reader on the luma plane of a frame, read in place.
///
/// Not thread-safe: each instance belongs to one thread or serial queue (in the pipeline,
/// the barcode output's queue).
package final class BarcodeDetector {
    package struct Configuration: Sendable, Equatable {
        /// Which symbologies to look for; fewer is faster and avoids false reads.
        package var types: Set<MachineReadableCodeType> = Set(MachineReadableCodeType.allCases)
        /// Scan more rows and rotations: finds more in poor images, about 2-3x slower.
        package var tryHarder = false

        package init(
            types: Set<MachineReadableCodeType> = Set(MachineReadableCodeType.allCases), tryHarder: Bool = false
        ) {
            self.types = types
            self.tryHarder = tryHarder
        }
    }

    package let configuration: Configuration
    /// Linear and 2D symbologies are read by two readers at once, one per core: zxing-cpp's
    /// 2D readers take most of the time, and the linear ones are done well before them.
    private let passes: [Pass]

    package convenience init(configuration: Configuration = Configuration()) throws {
        try self.init(configuration: configuration, zxingBinarizer: false)
    }

    /// `zxingBinarizer` leaves the 2D pass's binarisation to zxing-cpp instead of the shim's
    /// faster copy of it (tests compare the two).
    init(configuration: Configuration, zxingBinarizer: Bool) throws {
        guard !configuration.types.isEmpty else { throw SightlineError.invalidArgument("no code types to look for") }
        self.configuration = configuration
        let groups = [
            configuration.types.subtracting(Self.matrixTypes), configuration.types.intersection(Self.matrixTypes),
        ]
        var options: Int32 = 0
        if configuration.tryHarder { options |= Int32(SL_BARCODE_TRY_HARDER) }
        if zxingBinarizer { options |= Int32(SL_BARCODE_ZXING_BINARIZER) }
        passes = try groups.filter { !$0.isEmpty }.map { types in
            try Pass(formats: types.reduce(Int32(0)) { $0 | Self.zxingFormats(for: $1) }, options: options)
        }
    }

    static let matrixTypes: Set<MachineReadableCodeType> = [.aztec, .dataMatrix, .maxiCode, .microQR, .pdf417, .qr]

    /// Reads the codes in a frame that has a luma plane (gray8, yuv420p, nv12).
    package func detect(in pixels: PixelBuffer) throws -> [BarcodeDetection] {
        let luma = try pixels.requireLumaPlane()
        return try detect(
            luma: luma.baseAddress, width: pixels.width, height: pixels.height, bytesPerRow: luma.bytesPerRow)
    }

    /// Reads the codes in 8-bit single-channel pixels, in place.
    package func detect(luma: UnsafeRawPointer, width: Int, height: Int, bytesPerRow: Int) throws -> [BarcodeDetection]
    {
        let image = Pass.Image(luma: luma, width: width, height: height, bytesPerRow: bytesPerRow)
        let found: [[Pass.Read]]
        if passes.count == 1 {
            found = [try passes[0].read(image)]
        } else {
            let passes = passes
            let outcomes = Mutex([Result<[Pass.Read], Error>](repeating: .success([]), count: passes.count))
            DispatchQueue.concurrentPerform(iterations: passes.count) { index in
                let outcome = Result { try passes[index].read(image) }
                outcomes.withLock { $0[index] = outcome }
            }
            found = try outcomes.withLock { $0 }.map { try $0.get() }
        }
        return found.joined().compactMap { read in
            // AVFoundation names a 14-digit ITF ITF-14; zxing-cpp reads both as one format.
            guard let type = Self.type(zxingFormat: read.format, text: read.text), configuration.types.contains(type)
            else { return nil }
            // AVFoundation reports UPC-A as the EAN-13 it is a subset of.
            let text = read.format == Self.upcA ? "0" + read.text : read.text
            let corners =
                Self.matrixTypes.contains(type)
                ? read.corners
                : BarExtent.grow(read.corners, luma: luma, width: width, height: height, bytesPerRow: bytesPerRow)
            return BarcodeDetection(type: type, text: text, corners: corners)
        }
    }

    // zxing-cpp's BarcodeFormat bits (BarcodeFormat.h), which its C++ API keeps stable.
    private static let bits: [(MachineReadableCodeType, Int32)] = [
        (.aztec, 1 << 0), (.codabar, 1 << 1), (.code39, 1 << 2), (.code93, 1 << 3), (.code128, 1 << 4),
        (.gs1DataBar, 1 << 5), (.gs1DataBarExpanded, 1 << 6), (.dataMatrix, 1 << 7), (.ean8, 1 << 8),
        (.ean13, 1 << 9), (.maxiCode, 1 << 11), (.pdf417, 1 << 12), (.qr, 1 << 13), (.upce, 1 << 15),
        (.microQR, 1 << 16),
    ]
    private static let itf: Int32 = 1 << 10
    private static let upcA: Int32 = 1 << 14

    static func zxingFormats(for type: MachineReadableCodeType) -> Int32 {
        switch type {
        case .interleaved2of5, .itf14: itf
        case .ean13: (bits.first { $0.0 == .ean13 }!.1) | upcA
        default: bits.first { $0.0 == type }!.1
        }
    }

    /// A 14-digit ITF is ITF-14, as AVFoundation names it.
    private static func type(zxingFormat format: Int32, text: String) -> MachineReadableCodeType? {
        if format == itf { return text.utf8.count == 14 ? .itf14 : .interleaved2of5 }
        if format == upcA { return .ean13 }
        return bits.first { $0.1 == format }?.0
    }
}

/// One zxing-cpp reader and its result buffers. Its `read` runs on one thread at a time
/// (the detector's queue, or one iteration of its concurrent pass).
private final class Pass: @unchecked Sendable {
    /// The frame's luma, which outlives the pass and is only read.
    struct Image: @unchecked Sendable {
        let luma: UnsafeRawPointer
        let width: Int
        let height: Int
        let bytesPerRow: Int
    }

    /// A symbol as read, before it is named the AVFoundation way.
    struct Read {
        let format: Int32
        let text: String
        let corners: [(x: Int, y: Int)]
    }

    private let handle: OpaquePointer
    private var results = [sl_barcode](repeating: sl_barcode(), count: 32)
    private var errorBuffer = [CChar](repeating: 0, count: 256)

    init(formats: Int32, options: Int32) throws {
        var error = [CChar](repeating: 0, count: 256)
        guard let handle = sl_barcode_reader_create(formats, options, &error, error.count) else {
            throw SightlineError.detector(String(nulTerminated: error))
        }
        self.handle = handle
    }

    deinit { sl_barcode_reader_destroy(handle) }

    func read(_ image: Image) throws -> [Read] {
        let count = try callGrowingResults(&results, empty: sl_barcode(), error: &errorBuffer) {
            sl_barcode_reader_read(
                handle, image.luma.assumingMemoryBound(to: UInt8.self), Int32(image.width), Int32(image.height),
                image.bytesPerRow, &$0, Int32($0.count), &$1, $1.count)
        }
        // The text pointers are valid until the next read: copy them now.
        return results.prefix(count).map { raw in
            let c = raw.corners
            return Read(
                format: raw.format,
                text: String(decoding: UnsafeRawBufferPointer(start: raw.text, count: raw.text_length), as: UTF8.self),
                corners: [(c.0, c.1), (c.2, c.3), (c.4, c.5), (c.6, c.7)].map { (x: Int($0), y: Int($1)) })
        }
    }
}
