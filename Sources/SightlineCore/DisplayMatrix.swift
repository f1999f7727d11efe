/// A QuickTime display matrix (`tkhd`, and FFmpeg's display-matrix side data): nine values
/// `a b u c d v x y w`, 16.16 fixed point but `u v w` (2.30), that turn stored frames for
/// display; and the EXIF orientation (1 upright … 8) it amounts to.
package enum DisplayMatrix {
    package static let identity: [Int32] = [1 << 16, 0, 0, 0, 1 << 16, 0, 0, 0, 1 << 30]

    /// The EXIF orientation of a matrix, from the signs of its 2x2 part: (a, b, c, d) =
    /// (1, 0, 0, 1) is 1, (0, 1, -1, 0) a quarter turn clockwise (6).
    package static func exifOrientation(_ matrix: [Int32]) -> Int {
        let signs = [matrix[0], matrix[1], matrix[3], matrix[4]].map { $0.signum() }
        switch (signs[0], signs[1], signs[2], signs[3]) {
        case (-1, 0, 0, 1): return 2
        case (-1, 0, 0, -1): return 3
        case (1, 0, 0, -1): return 4
        case (0, 1, 1, 0): return 5
        case (0, 1, -1, 0): return 6
        case (0, -1, -1, 0): return 7
        case (0, -1, 1, 0): return 8
        default: return 1
        }
    }

    /// The matrix that shows `width`x`height` frames turned by an EXIF orientation, moved
    /// back into the positive quadrant as iOS writes it (6: `0 1 0 -1 0 0 height 0 1`).
    package static func matrix(exifOrientation: Int, width: Int, height: Int) -> [Int32] {
        let (one, w, h) = (Int32(1 << 16), Int32(width) << 16, Int32(height) << 16)
        let (a, b, c, d, x, y): (Int32, Int32, Int32, Int32, Int32, Int32) =
            switch exifOrientation {
            case 2: (-one, 0, 0, one, w, 0)
            case 3: (-one, 0, 0, -one, w, h)
            case 4: (one, 0, 0, -one, 0, h)
            case 5: (0, one, one, 0, 0, 0)
            case 6: (0, one, -one, 0, h, 0)
            case 7: (0, -one, -one, 0, h, w)
            case 8: (0, -one, one, 0, 0, w)
            default: (one, 0, 0, one, 0, 0)
            }
        return [a, b, 0, c, d, 0, x, y, 1 << 30]
    }

    /// An FFmpeg `rotate` tag (degrees clockwise) as an EXIF orientation.
    package static func exifOrientation(rotateTag degrees: Int) -> Int {
        switch ((degrees % 360) + 360) % 360 {
        case 90: 6
        case 180: 3
        case 270: 8
        default: 1
        }
    }
}
