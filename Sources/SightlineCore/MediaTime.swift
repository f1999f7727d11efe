/// A point on a media timeline as a rational number `value / timescale` seconds, like
/// `CMTime`. Keeping the stream's own timescale (for example 1/30 or 1/90000) keeps
/// timestamps exact from source to file.
///
/// Times come from outside (bus messages, files, streams), so nothing here traps on a
/// representable value: decoding refuses a timescale that is not positive, and arithmetic
/// that would leave `Int64` saturates at its ends instead (as `CMTime` turns into
/// ±infinity). `isWithinLimits` is what an edge checks before trusting a time.
public struct MediaTime: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    public var value: Int64
    public var timescale: Int32

    public init(value: Int64, timescale: Int32) {
        precondition(timescale > 0, "MediaTime needs a positive timescale")
        self.value = value
        self.timescale = timescale
    }

    private enum CodingKeys: String, CodingKey { case value, timescale }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let timescale = try container.decode(Int32.self, forKey: .timescale)
        guard timescale > 0 else {
            throw DecodingError.dataCorruptedError(
                forKey: .timescale, in: container, debugDescription: "a timescale must be positive")
        }
        self.init(value: try container.decode(Int64.self, forKey: .value), timescale: timescale)
    }

    public static let zero = MediaTime(value: 0, timescale: 1)

    /// The largest magnitude, in seconds, a time from outside may have (136 years, so that
    /// clocks counted from 1970 fit), and the largest timescale (2^30 − 1, so that
    /// nanoseconds fit): any such time in any such timescale is under 2^62 ticks, so a sum or
    /// difference of two never leaves `Int64`.
    public static let limitSeconds: Double = 0x1p32
    public static let limitTimescale: Int32 = (1 << 30) - 1

    /// Whether this time is one an edge may accept (`limitSeconds`, `limitTimescale`).
    public var isWithinLimits: Bool { timescale <= Self.limitTimescale && abs(seconds) < Self.limitSeconds }

    /// Rounds `seconds` to the nearest tick of `timescale`; beyond `Int64`, the nearest end
    /// of it, and NaN as zero.
    public init(seconds: Double, timescale: Int32) {
        self.init(value: Self.saturated(seconds * Double(timescale)), timescale: timescale)
    }

    public var seconds: Double { Double(value) / Double(timescale) }

    /// The same instant in another timescale, rounded to the nearest tick.
    public func converted(to newTimescale: Int32) -> MediaTime {
        if newTimescale == timescale { return self }
        let (product, overflow) = value.multipliedReportingOverflow(by: Int64(newTimescale))
        let half = Int64(timescale) / 2
        let (rounded, roundingOverflow) =
            product >= 0 ? product.addingReportingOverflow(half) : product.subtractingReportingOverflow(half)
        if overflow || roundingOverflow { return MediaTime(seconds: seconds, timescale: newTimescale) }
        return MediaTime(value: rounded / Int64(timescale), timescale: newTimescale)
    }

    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        let scale = max(lhs.timescale, rhs.timescale)
        let (left, right) = (lhs.converted(to: scale), rhs.converted(to: scale))
        let (sum, overflow) = left.value.addingReportingOverflow(right.value)
        if overflow { return MediaTime(value: left.value < 0 ? .min : .max, timescale: scale) }
        return MediaTime(value: sum, timescale: scale)
    }

    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        // -Int64.min is not an Int64: the nearest is Int64.max.
        lhs + MediaTime(value: rhs.value == .min ? .max : -rhs.value, timescale: rhs.timescale)
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
        let divisor = gcd(value.magnitude, UInt64(timescale))
        hasher.combine(value < 0)
        hasher.combine(value.magnitude / max(divisor, 1))
        hasher.combine(UInt64(timescale) / max(divisor, 1))
    }

    public var description: String { "\(value)/\(timescale)" }

    /// `ticks` rounded to an `Int64`, the nearest end of it beyond, and NaN as zero.
    private static func saturated(_ ticks: Double) -> Int64 {
        let rounded = ticks.rounded()
        if rounded.isNaN { return 0 }
        // 2^63 is the first Double above Int64.max.
        if rounded >= 0x1p63 { return .max }
        if rounded < -0x1p63 { return .min }
        return Int64(rounded)
    }
}

private func gcd(_ a: UInt64, _ b: UInt64) -> UInt64 {
    var (a, b) = (a, b)
    while b != 0 { (a, b) = (b, a % b) }
    return a
}
