import ArgumentParser

/// The checks every number an option or a config key gives goes through before the
/// command computes with it: finite, within a range that any later arithmetic (seconds to
/// milliseconds, sizes to bytes) survives, and named in one line when it is not.
enum OptionValues {
    /// The longest duration any option takes: 100 years.
    static let maximumSeconds = 100 * 365.25 * 86400
    /// The largest size any option takes: 1 EiB.
    static let maximumBytes = Double(1 << 60)

    /// `seconds` as a `Duration`, when it is finite and within 0 (or just above, unless
    /// `allowZero`) to 100 years.
    static func duration(_ seconds: Double, option: String, allowZero: Bool = false) throws -> Duration {
        guard seconds.isFinite, allowZero ? seconds >= 0 : seconds > 0, seconds <= maximumSeconds else {
            throw ValidationError(
                "\(option) \(shown(String(seconds))) must be \(allowZero ? "0" : "more than 0") to \(Int(maximumSeconds)) seconds"
            )
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    /// `value` when it is finite and within `range`.
    static func number(_ value: Double, option: String, in range: ClosedRange<Double>) throws -> Double {
        guard value.isFinite, range.contains(value) else {
            throw ValidationError(
                "\(option) \(shown(String(value))) must be from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// `value` when it is within `range`.
    static func integer(_ value: Int, option: String, in range: ClosedRange<Int>) throws -> Int {
        guard range.contains(value) else {
            throw ValidationError("\(option) \(value) must be from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// `text` as a message shows it unquoted: whole up to 80 characters, cut beyond.
    static func cut(_ text: String) -> String { text.count <= 80 ? text : "\(text.prefix(80))…" }

    /// A value as an error line shows it: quoted, and cut to 80 characters.
    static func shown(_ text: String) -> String {
        text.count <= 80 ? "'\(text)'" : "'\(text.prefix(80))…' (\(text.utf8.count) bytes)"
    }
}
