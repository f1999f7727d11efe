import CZXing
import Foundation
import SightlineCapture
import SightlineCore
import SightlineSamples
import Testing

@testable import SightlineDetection

func grayImage(_ path: String) throws -> VideoFrame {
    let source = try MediaFileSource(url: path)
    guard case .frame(let frame) = try source.read() else {
        throw SightlineError.invalidArgument("no image in \(path)")
    }
    return frame
}

@Suite struct BarcodeDetectorTests {
    /// Every code on exactly the frames it is on, with the right type and text, its corners
    /// inside the pasted symbol.
    @Test func readsEveryGeneratedCodeOnItsFramesOnly() throws {
        let truth = try BarcodeTruth.load()
        let frames = try sampleFrames(SampleMedia.barcodes640x480)
        #expect(frames.count == truth.frames)
        let detector = try BarcodeDetector()
        var misses: [String] = []
        for (n, frame) in frames.enumerated() {
            let found = try detector.detect(in: frame.pixels)
            let expected = truth.codes.filter { $0.first <= n && n <= $0.last }
            #expect(Set(found.map { "\($0.type.rawValue):\($0.text)" }) == truth.codes(onFrame: n), "frame \(n)")
            for code in expected {
                guard let read = found.first(where: { $0.text == code.text }), let box = code.boxes["\(n)"] else {
                    misses.append("\(code.type) at \(n)")
                    continue
                }
                for corner in read.corners {
                    #expect((box[0]...box[0] + box[2]).contains(corner.x), "\(code.type) frame \(n) \(read.corners)")
                    #expect((box[1]...box[1] + box[3]).contains(corner.y), "\(code.type) frame \(n) \(read.corners)")
                }
                // Linear codes cover their bars (the box also holds the quiet zone and digits).
                if code.type != "qr" {
                    let tall = read.corners[3].y - read.corners[0].y
                    #expect(tall * 4 >= box[3] * 3, "\(code.type) frame \(n) \(read.corners)")
                }
            }
        }
        #expect(misses.isEmpty)
    }

    /// A phone photo of four book backs (OpenCV's barcode tutorial image, from Debian's
    /// opencv-doc) with four ISBN EAN-13 codes: upright, turned 90° and upside down. The
    /// upside-down one, 9787122276124, is blurred and tilted: zxing-cpp (1.4 here, and 3.1)
    /// does not read it in any setting, zbar does. The test pins what is read, so a reader
    /// upgrade that finds it shows up here.
    @Test func readsPrintedBarcodesInAPhoto() throws {
        let photo = Bundle.module.resourceURL!.appendingPathComponent("Barcodes/books.jpg").path
        let frame = try grayImage(photo)
        #expect(frame.pixels.width == 576 && frame.pixels.height == 768)
        let found = try BarcodeDetector(configuration: .init(tryHarder: true)).detect(in: frame.pixels)
        #expect(Set(found.map(\.text)) == ["9787564350840", "9783319200064", "9787118081473"], "\(found)")
        #expect(found.allSatisfy { $0.type == .ean13 })
        // Each where the photo has it (pixels), the turned one standing on its side.
        // The boxes hold the bars and their guard lines, not the printed digits.
        let boxes: [String: (x: ClosedRange<Int>, y: ClosedRange<Int>)] = [
            "9787564350840": (10...165, 155...270), "9783319200064": (370...566, 170...265),
            "9787118081473": (40...148, 510...670),
        ]
        for code in found {
            let box = try #require(boxes[code.text])
            #expect(code.corners.allSatisfy { box.x.contains($0.x) && box.y.contains($0.y) }, "\(code)")
        }
        let turned = try #require(found.first { $0.text == "9787118081473" })
        let (topLeft, topRight) = (turned.corners[0], turned.corners[1])
        #expect(abs(topLeft.y - topRight.y) > abs(topLeft.x - topRight.x))
        // Without trying harder, only the clearest is read: the reason for the option. Its
        // scan lines cross the bars in a band 8 pixels high; the corners still cover the bars.
        let clearest = try BarcodeDetector().detect(in: frame.pixels)
        #expect(clearest.map(\.text) == ["9787564350840"])
        if let code = clearest.first {
            let box = try #require(boxes[code.text])
            #expect(code.corners.allSatisfy { box.x.contains($0.x) && box.y.contains($0.y) }, "\(code)")
            #expect(code.corners[3].y - code.corners[0].y >= 90, "\(code)")
        }
    }

    /// The 2D pass binarises frames itself (zxing-cpp's LocalAverage rule, vectorised). It
    /// must read what zxing-cpp's own binariser reads, at the same corners: on whole frames,
    /// on sizes that are not multiples of 8 (the last blocks overlap), and at the smallest
    /// size the rule takes (below it, zxing-cpp binarises).
    @Test func ownBinarizerReadsWhatZXingReads() throws {
        let configuration = BarcodeDetector.Configuration(types: BarcodeDetector.matrixTypes)
        let ours = try BarcodeDetector(configuration: configuration)
        let zxing = try BarcodeDetector(configuration: configuration, zxingBinarizer: true)
        var reads = 0
        for (n, frame) in try sampleFrames(SampleMedia.barcodes640x480).enumerated() {
            let luma = try frame.pixels.requireLumaPlane()
            for (width, height) in [(640, 480), (637, 477), (40, 40), (39, 39)] {
                func read(_ detector: BarcodeDetector) throws -> [String] {
                    try detector.detect(
                        luma: luma.baseAddress, width: width, height: height, bytesPerRow: luma.bytesPerRow
                    ).map { "\($0.type.rawValue) \($0.text) \($0.corners)" }
                }
                let expected = try read(zxing)
                #expect(try read(ours) == expected, "frame \(n) at \(width)x\(height)")
                reads += expected.count
            }
        }
        #expect(reads == 240)  // the QR code's 120 frames, whole and cropped
    }

    /// The same binarisation pixel by pixel, against the rule written out plainly, on every
    /// tenth frame, whole and at a size that is not a multiple of 8.
    @Test func ownBinarizerFollowsTheRule() throws {
        let frames = try sampleFrames(SampleMedia.barcodes640x480)
        for n in stride(from: 0, to: frames.count, by: 10) {
            let luma = try frames[n].pixels.requireLumaPlane()
            let pixels = luma.baseAddress.assumingMemoryBound(to: UInt8.self)
            for (width, height) in [(640, 480), (637, 477)] {
                var binary = [UInt8](repeating: 1, count: width * height)
                #expect(sl_barcode_binarize(pixels, Int32(width), Int32(height), luma.bytesPerRow, &binary) == 0)
                let expected = localAverageRule(pixels, width: width, height: height, bytesPerRow: luma.bytesPerRow)
                let differing = zip(binary, expected).filter { $0 != $1 }.count
                #expect(differing == 0, "frame \(n) at \(width)x\(height)")
            }
        }
        var small = [UInt8](repeating: 0, count: 39 * 39)
        #expect(sl_barcode_binarize(small, 39, 39, 39, &small) == -1)
    }

    @Test func looksOnlyForTheConfiguredTypes() throws {
        let frame = try sampleFrames(SampleMedia.barcodes640x480)[130]  // QR, EAN-13 and EAN-8
        let onlyQR = try BarcodeDetector(configuration: .init(types: [.qr]))
        #expect(try onlyQR.detect(in: frame.pixels).map(\.type) == [.qr])
        #expect(throws: SightlineError.self) { try MachineReadableCodeType.list("qr,bogus") }
        #expect(try MachineReadableCodeType.list("qr, ean13") == [.qr, .ean13])
    }
}

/// zxing-cpp's LocalAverage (HybridBinarizer) rule, as plainly as it can be written: each
/// 8x8 block's black point is its mean, or for a flat block (range <= 24) half its minimum,
/// raised to the neighbours' weighted mean when that is above the minimum; a pixel is black
/// (0) when at most the mean black point of the 5x5 blocks around its block. The last block
/// row and column are moved in to end at the image's edge.
func localAverageRule(_ luma: UnsafePointer<UInt8>, width: Int, height: Int, bytesPerRow: Int) -> [UInt8] {
    let (columns, rows) = ((width + 7) / 8, (height + 7) / 8)
    func origin(_ block: Int, _ size: Int) -> Int { min(block * 8, size - 8) }
    func pixel(_ x: Int, _ y: Int) -> Int { Int(luma[y * bytesPerRow + x]) }
    var points = [[Int]](repeating: [Int](repeating: 0, count: columns), count: rows)
    for by in 0..<rows {
        for bx in 0..<columns {
            let (top, left) = (origin(by, height), origin(bx, width))
            let values = (top..<top + 8).flatMap { y in (left..<left + 8).map { x in pixel(x, y) } }
            let (low, high) = (values.min()!, values.max()!)
            var point = values.reduce(0, +) / 64
            if high - low <= 24 {
                point = low / 2
                if by > 0 && bx > 0 {
                    let neighbours = (points[by - 1][bx] + 2 * points[by][bx - 1] + points[by - 1][bx - 1]) / 4
                    if low < neighbours { point = neighbours }
                }
            }
            points[by][bx] = point
        }
    }
    var binary = [UInt8](repeating: 0, count: width * height)
    for by in 0..<rows {
        for bx in 0..<columns {
            let (centreY, centreX) = (min(max(by, 2), rows - 3), min(max(bx, 2), columns - 3))
            let around = (-2...2).flatMap { dy in (-2...2).map { dx in points[centreY + dy][centreX + dx] } }
            let threshold = around.reduce(0, +) / 25
            let (top, left) = (origin(by, height), origin(bx, width))
            for y in top..<top + 8 {
                for x in left..<left + 8 { binary[y * width + x] = pixel(x, y) <= threshold ? 0 : 255 }
            }
        }
    }
    return binary
}
