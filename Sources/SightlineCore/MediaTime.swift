/// A point on a media timeline as a rational number `value / timescale` seconds, like
/// `CMTime`. Keeping the stream's own timescale (for example 1/30 or 1/90000) keeps
/// timestamps exact from source to file.
public struct MediaTime: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public var value: Int64
    public var timescale: Int32

    public init(value: Int64, timescale: Int32) {
        precondition(timescale > 0, "MediaTime needs a positive timescale")
        self.value = value
        self.timescale = timescale
    }

    public static let zero = MediaTime(value: 0, timescale: 1)

    /// Rounds `seconds` to the nearest tick of `timescale`.
    public init(seconds: Double, timescale: Int32) {
        self.init(value: Int64((seconds * Double(timescale)).rounded()), timescale: timescale)
    }

    public var seconds: Double { Double(value) / Double(timescale) }

    /// The same instant in another timescale, rounded to the nearest tick.
    public func converted(to newTimescale: Int32) -> MediaTime {
        if newTimescale == timescale { return self }
        let (product, overflow) = value.multipliedReportingOverflow(by: Int64(newTimescale))
        if overflow { return MediaTime(seconds: seconds, timescale: newTimescale) }
        let half = Int64(timescale) / 2
        let rounded = product >= 0 ? (product + half) / Int64(timescale) : (product - half) / Int64(timescale)
        return MediaTime(value: rounded, timescale: newTimescale)
    }

    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        if lhs.timescale == rhs.timescale {
            return MediaTime(value: lhs.value + rhs.value, timescale: lhs.timescale)
        }
        let scale = max(lhs.timescale, rhs.timescale)
        return MediaTime(value: lhs.converted(to: scale).value + rhs.converted(to: scale).value, timescale: scale)
    }

    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        lhs + MediaTime(value: -rhs.value, timescale: rhs.timescale)
    }

    /// Exact comparison by cross-multiplication (no floating point).
    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool {
        lhs.value.multipliedFullWidth(by: Int64(rhs.timescale))
            < rhs.value.multipliedFullWidth(by: Int64(lhs.timescale))
    }

    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool {
        lhs.value.multipliedFullWidth(by: Int64(rhs.timescale))
            == rhs.value.multipliedFullWidth(by: Int64(lhs.timescale))
    }

    public func hash(into hasher: inout Hasher) {
        // Equal instants in different timescales must hash alike: hash the reduced fraction.
        let divisor = gcd(abs(value), Int64(timescale))
        hasher.combine(value / max(divisor, 1))
        hasher.combine(Int64(timescale) / max(divisor, 1))
    }

    public var description: String { "\(value)/\(timescale)" }
}

private func gcd(_ a: Int64, _ b: Int64) -> Int64 {
    var (a, b) = (a, b)
    while b != 0 { (a, b) = (b, a % b) }
    return a
}
