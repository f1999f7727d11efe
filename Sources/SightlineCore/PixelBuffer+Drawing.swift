/// A colour as limited-range BT.601 YCbCr, the values a decoded H.264 picture holds.
package struct YCbCrColour: Sendable, Equatable {
    package var y: UInt8
    package var cb: UInt8
    package var cr: UInt8

    package init(y: UInt8, cb: UInt8, cr: UInt8) {
        (self.y, self.cb, self.cr) = (y, cb, cr)
    }

    /// From 8-bit RGB.
    package init(red: Double, green: Double, blue: Double) {
        func clamp(_ value: Double) -> UInt8 { UInt8(max(16, min(240, value.rounded()))) }
        y = clamp(16 + 0.257 * red + 0.504 * green + 0.098 * blue)
        cb = clamp(128 - 0.148 * red - 0.291 * green + 0.439 * blue)
        cr = clamp(128 + 0.439 * red - 0.368 * green - 0.071 * blue)
    }

    package static let black = YCbCrColour(y: 16, cb: 128, cr: 128)
    package static let white = YCbCrColour(y: 235, cb: 128, cr: 128)
}

/// A colour as 8-bit sRGB: how a kind of object is drawn, in the console's pages
/// (`css`) and burned into pictures (`ycbcr`).
package struct RGBColour: Sendable, Equatable {
    package var red: UInt8
    package var green: UInt8
    package var blue: UInt8

    package init(red: UInt8, green: UInt8, blue: UInt8) { (self.red, self.green, self.blue) = (red, green, blue) }

    /// The console's face green, code amber and other detectors' sky blue.
    package static let green = RGBColour(red: 0, green: 224, blue: 80)
    package static let amber = RGBColour(red: 255, green: 176, blue: 0)
    package static let blue = RGBColour(red: 48, green: 160, blue: 255)

    package var ycbcr: YCbCrColour { YCbCrColour(red: Double(red), green: Double(green), blue: Double(blue)) }

    /// As full-range BT.601 YCbCr (JPEG's), for drawing into a picture about to be a JPEG.
    package var fullRangeYCbCr: YCbCrColour {
        let (r, g, b) = (Double(red), Double(green), Double(blue))
        func clamp(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        return YCbCrColour(
            y: clamp(0.299 * r + 0.587 * g + 0.114 * b), cb: clamp(128 - 0.168736 * r - 0.331264 * g + 0.5 * b),
            cr: clamp(128 + 0.5 * r - 0.418688 * g - 0.081312 * b))
    }

    /// `#rrggbb`.
    package var css: String { "#" + [red, green, blue].map { String(format: "%02x", $0) }.joined() }
}

/// Drawing into yuv420p pictures this code owns (decoded for a snapshot or a burn-in):
/// plain loops over the planes, no allocation.
extension PixelBuffer {
    /// Fills the pixel rectangle `x0...x1`, `y0...y1` (clipped to the picture).
    package func fill(x0: Int, y0: Int, x1: Int, y1: Int, colour: YCbCrColour) {
        precondition(format == .yuv420p, "drawing needs yuv420p")
        let (x0, x1) = (max(0, x0), min(width - 1, x1))
        let (y0, y1) = (max(0, y0), min(height - 1, y1))
        guard x0 <= x1, y0 <= y1 else { return }
        for (index, value) in [colour.y, colour.cb, colour.cr].enumerated() {
            let plane = planes[index]
            let shift = index == 0 ? 0 : 1
            let base = UnsafeMutableRawPointer(mutating: plane.baseAddress)
            for row in (y0 >> shift)...(y1 >> shift) {
                (base + row * plane.bytesPerRow + (x0 >> shift)).initializeMemory(
                    as: UInt8.self, repeating: value, count: (x1 >> shift) - (x0 >> shift) + 1)
            }
        }
    }

    /// The outline of `rect` (normalised to this picture), `thickness` pixels inside it.
    package func strokeRect(_ rect: NormalizedRect, colour: YCbCrColour, thickness: Int) {
        let left = Int((rect.x * Double(width)).rounded())
        let top = Int((rect.y * Double(height)).rounded())
        let right = Int(((rect.x + rect.width) * Double(width)).rounded()) - 1
        let bottom = Int(((rect.y + rect.height) * Double(height)).rounded()) - 1
        fill(x0: left, y0: top, x1: right, y1: top + thickness - 1, colour: colour)
        fill(x0: left, y0: bottom - thickness + 1, x1: right, y1: bottom, colour: colour)
        fill(x0: left, y0: top, x1: left + thickness - 1, y1: bottom, colour: colour)
        fill(x0: right - thickness + 1, y0: top, x1: right, y1: bottom, colour: colour)
    }

    /// Blends `colour` over the picture through an 8-bit coverage mask (a glyph) whose top-left
    /// corner lands at `x`, `y`; chroma takes the colour where a 2x2 block is mostly covered.
    package func blend(
        mask: UnsafeBufferPointer<UInt8>, maskWidth: Int, maskHeight: Int, maskPitch: Int, x: Int, y: Int,
        colour: YCbCrColour
    ) {
        precondition(format == .yuv420p, "drawing needs yuv420p")
        let luma = UnsafeMutableRawPointer(mutating: planes[0].baseAddress).assumingMemoryBound(to: UInt8.self)
        let cb = UnsafeMutableRawPointer(mutating: planes[1].baseAddress).assumingMemoryBound(to: UInt8.self)
        let cr = UnsafeMutableRawPointer(mutating: planes[2].baseAddress).assumingMemoryBound(to: UInt8.self)
        for row in 0..<maskHeight {
            let py = y + row
            guard py >= 0, py < height else { continue }
            for column in 0..<maskWidth {
                let px = x + column
                guard px >= 0, px < width else { continue }
                let alpha = Int(mask[row * maskPitch + column])
                guard alpha > 0 else { continue }
                let index = py * planes[0].bytesPerRow + px
                luma[index] = UInt8((Int(luma[index]) * (255 - alpha) + Int(colour.y) * alpha) / 255)
                if alpha > 127, py & 1 == 0, px & 1 == 0 {
                    let chroma = (py >> 1) * planes[1].bytesPerRow + (px >> 1)
                    cb[chroma] = colour.cb
                    cr[(py >> 1) * planes[2].bytesPerRow + (px >> 1)] = colour.cr
                }
            }
        }
    }

    /// A new yuv420p picture showing this one turned by an EXIF orientation (1 upright … 8):
    /// 6 turns it a quarter clockwise, as a phone held upright shows it.
    package func oriented(_ orientation: Int) -> PixelBuffer {
        precondition(format == .yuv420p, "turning needs yuv420p")
        guard (2...8).contains(orientation) else { return self }
        let swaps = orientation >= 5
        let (newWidth, newHeight) = swaps ? (height, width) : (width, height)
        return PixelBuffer(format: .yuv420p, width: newWidth, height: newHeight) { bases in
            for index in 0..<3 {
                let source = planes[index]
                let shift = index == 0 ? 0 : 1
                let (sw, sh) = ((width + shift) >> shift, (height + shift) >> shift)
                let (tw, th) = swaps ? (sh, sw) : (sw, sh)
                let target = bases[index].assumingMemoryBound(to: UInt8.self)
                let input = source.baseAddress.assumingMemoryBound(to: UInt8.self)
                let targetPitch = PixelFormat.yuv420p.planeGeometry(width: newWidth, height: newHeight)[index]
                    .bytesPerRow
                for ty in 0..<th {
                    for tx in 0..<tw {
                        // Where the target pixel comes from in the stored picture.
                        let (sx, sy): (Int, Int) =
                            switch orientation {
                            case 2: (sw - 1 - tx, ty)
                            case 3: (sw - 1 - tx, sh - 1 - ty)
                            case 4: (tx, sh - 1 - ty)
                            case 5: (ty, tx)
                            case 6: (ty, sh - 1 - tx)
                            case 7: (sw - 1 - ty, sh - 1 - tx)
                            default: (sw - 1 - ty, tx)  // 8
                            }
                        target[ty * targetPitch + tx] = input[sy * source.bytesPerRow + sx]
                    }
                }
            }
        }
    }
}

extension NormalizedRect {
    /// This rectangle (normalised to a stored picture) where it lands once the picture is
    /// turned by an EXIF orientation.
    package func oriented(_ orientation: Int) -> NormalizedRect {
        let (x0, y0, x1, y1) = (x, y, x + width, y + height)
        func place(_ px: Double, _ py: Double) -> (Double, Double) {
            switch orientation {
            case 2: (1 - px, py)
            case 3: (1 - px, 1 - py)
            case 4: (px, 1 - py)
            case 5: (py, px)
            case 6: (1 - py, px)
            case 7: (1 - py, 1 - px)
            case 8: (py, 1 - px)
            default: (px, py)
            }
        }
        let a = place(x0, y0)
        let b = place(x1, y1)
        return NormalizedRect(
            x: min(a.0, b.0), y: min(a.1, b.1), width: abs(a.0 - b.0), height: abs(a.1 - b.1))
    }
}
