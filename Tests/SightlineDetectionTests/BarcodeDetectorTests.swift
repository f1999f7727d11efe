import Foundation
import SightlineCapture
import SightlineCore
import SightlineDetection
import SightlineSamples
import Testing

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
        let boxes: [String: (x: ClosedRange<Int>, y: ClosedRange<Int>)] = [
            "9787564350840": (10...165, 165...270), "9783319200064": (370...566, 185...265),
            "9787118081473": (40...148, 510...670),
        ]
        for code in found {
            let box = try #require(boxes[code.text])
            #expect(code.corners.allSatisfy { box.x.contains($0.x) && box.y.contains($0.y) }, "\(code)")
        }
        let turned = try #require(found.first { $0.text == "9787118081473" })
        let (topLeft, topRight) = (turned.corners[0], turned.corners[1])
        #expect(abs(topLeft.y - topRight.y) > abs(topLeft.x - topRight.x))
        // Without trying harder, only the clearest is read: the reason for the option.
        #expect(try BarcodeDetector().detect(in: frame.pixels).map(\.text) == ["9787564350840"])
    }

    @Test func looksOnlyForTheConfiguredTypes() throws {
        let frame = try sampleFrames(SampleMedia.barcodes640x480)[130]  // QR, EAN-13 and EAN-8
        let onlyQR = try BarcodeDetector(configuration: .init(types: [.qr]))
        #expect(try onlyQR.detect(in: frame.pixels).map(\.type) == [.qr])
        #expect(throws: SightlineError.self) { try MachineReadableCodeType.list("qr,bogus") }
        #expect(try MachineReadableCodeType.list("qr, ean13") == [.qr, .ean13])
    }
}
