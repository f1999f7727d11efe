import CFreeType
import SightlineCore

/// Draws text into yuv420p pictures with FreeType and a font from Debian's fonts-dejavu-core:
/// the labels and captions of a burn-in. Each glyph is rendered once and kept. Not
/// thread-safe: one owner.
final class TextRenderer {
    static let defaultFont = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"

    private struct Glyph {
        var bitmap: [UInt8]
        var width: Int
        var rows: Int
        /// From the pen to the bitmap's left edge, and from the baseline up to its top.
        var left: Int
        var top: Int
        var advance: Int
    }

    private var library: FT_Library?
    private var face: FT_Face?
    private var glyphs: [Unicode.Scalar: Glyph] = [:]
    let pixelSize: Int
    /// Height above and below the baseline that any line of text takes.
    let ascent: Int
    let descent: Int

    init(pixelSize: Int, fontPath: String = TextRenderer.defaultFont) throws {
        self.pixelSize = pixelSize
        guard FT_Init_FreeType(&library) == 0, let library else {
            throw SightlineError.invalidArgument("FreeType cannot start")
        }
        guard FT_New_Face(library, fontPath, 0, &face) == 0, let face else {
            FT_Done_FreeType(library)
            throw SightlineError.invalidArgument(
                "cannot load the font \(fontPath) (Debian: apt-get install fonts-dejavu-core)")
        }
        FT_Set_Pixel_Sizes(face, 0, FT_UInt(pixelSize))
        let metrics = face.pointee.size.pointee.metrics
        ascent = Int(metrics.ascender >> 6)
        descent = Int(-metrics.descender >> 6)
    }

    deinit {
        FT_Done_Face(face)
        FT_Done_FreeType(library)
    }

    /// How wide `text` is, in pixels.
    func width(of text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + (glyph($1)?.advance ?? 0) }
    }

    /// Draws `text` with its top-left corner at `x`, `y`, on a solid `background` box with a
    /// small margin, so it reads on any picture.
    func draw(_ text: String, x: Int, y: Int, colour: YCbCrColour, background: YCbCrColour, on picture: PixelBuffer) {
        let margin = max(2, pixelSize / 6)
        picture.fill(
            x0: x - margin, y0: y - margin, x1: x + width(of: text) + margin - 1, y1: y + ascent + descent + margin - 1,
            colour: background)
        var pen = x
        let baseline = y + ascent
        for scalar in text.unicodeScalars {
            guard let glyph = glyph(scalar) else { continue }
            glyph.bitmap.withUnsafeBufferPointer { mask in
                picture.blend(
                    mask: mask, maskWidth: glyph.width, maskHeight: glyph.rows, maskPitch: glyph.width,
                    x: pen + glyph.left, y: baseline - glyph.top, colour: colour)
            }
            pen += glyph.advance
        }
    }

    private func glyph(_ scalar: Unicode.Scalar) -> Glyph? {
        if let cached = glyphs[scalar] { return cached }
        guard let face, FT_Load_Char(face, FT_ULong(scalar.value), cfreetype_load_render()) == 0,
            let slot = face.pointee.glyph
        else { return nil }
        let bitmap = slot.pointee.bitmap
        let (width, rows, pitch) = (Int(bitmap.width), Int(bitmap.rows), Int(bitmap.pitch))
        var pixels = [UInt8](repeating: 0, count: width * rows)
        if let buffer = bitmap.buffer, pitch >= width {
            for row in 0..<rows {
                for column in 0..<width { pixels[row * width + column] = buffer[row * pitch + column] }
            }
        }
        let glyph = Glyph(
            bitmap: pixels, width: width, rows: rows, left: Int(slot.pointee.bitmap_left),
            top: Int(slot.pointee.bitmap_top), advance: Int(slot.pointee.advance.x >> 6))
        glyphs[scalar] = glyph
        return glyph
    }
}
