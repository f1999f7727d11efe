/// A `Range` request header read as RFC 9110 (14.1.2, 14.2) has it, against a
/// representation of `size` bytes. Hummingbird's `FileMiddleware` reads `bytes=-N` as the
/// first N + 1 bytes, not the last N, and answers ranges past the end with 206; the console
/// puts this reading in front of it and hands it one plain `first-last` range.
package enum ByteRanges: Equatable, Sendable {
    /// Serve the whole representation (200): no header, another unit, a header that is not
    /// a valid `bytes=` set (which RFC 9110 says to ignore), or more ranges than `limit`.
    case whole
    /// 416, with `Content-Range: bytes */size`: no range of the set overlaps the content.
    case unsatisfiable
    /// 206 with this range. Several satisfiable ranges are answered as one range from the
    /// first byte any asks for to the last (RFC 9110 lets a server coalesce them), never
    /// as `multipart/byteranges`.
    case range(ClosedRange<Int>)

    /// Ranges in one header beyond which the header is ignored.
    package static let limit = 64

    package init(header: String?, size: Int) {
        guard let header, let set = Self.rangeSet(header) else {
            self = .whole
            return
        }
        var covered: ClosedRange<Int>?
        for spec in set {
            guard let range = spec.satisfiable(size: size) else { continue }
            covered =
                covered.map { min($0.lowerBound, range.lowerBound)...max($0.upperBound, range.upperBound) } ?? range
        }
        self = covered.map { .range($0) } ?? .unsatisfiable
    }

    /// The `Content-Range` of a 416 for `size` bytes.
    package static func unsatisfiedContentRange(size: Int) -> String { "bytes */\(size)" }

    private enum Spec {
        case from(Int, through: Int?)
        case suffix(Int)

        func satisfiable(size: Int) -> ClosedRange<Int>? {
            switch self {
            case .from(let first, let last):
                guard first < size else { return nil }
                return first...min(last ?? Int.max, size - 1)
            case .suffix(let length):
                guard length > 0, size > 0 else { return nil }
                return max(0, size - length)...(size - 1)
            }
        }
    }

    /// The specs of `bytes=<range>, <range>…`, or nil when the header is not one.
    private static func rangeSet(_ header: String) -> [Spec]? {
        guard let equals = header.firstIndex(of: "="),
            header[..<equals].trimmingWhitespace.lowercased() == "bytes"
        else { return nil }
        let parts = header[header.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
        // Empty list elements are allowed (RFC 9110 5.6.1); at least one range is not.
        let specs = parts.map(\.trimmingWhitespace).filter { !$0.isEmpty }
        guard !specs.isEmpty, specs.count <= limit else { return nil }
        var result: [Spec] = []
        for spec in specs {
            guard let dash = spec.firstIndex(of: "-") else { return nil }
            let (first, last) = (spec[..<dash], spec[spec.index(after: dash)...])
            if first.isEmpty {
                guard let length = number(last) else { return nil }
                result.append(.suffix(length))
            } else {
                guard let start = number(first) else { return nil }
                if last.isEmpty {
                    result.append(.from(start, through: nil))
                } else {
                    guard let end = number(last), start <= end else { return nil }
                    result.append(.from(start, through: end))
                }
            }
        }
        return result
    }

    /// Decimal digits only; a number past `Int.max` is `Int.max` (beyond any file).
    private static func number(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        var value = 0
        for digit in text.utf8 {
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(Int(digit - UInt8(ascii: "0")))
            if overflow || carry { return Int.max }
            value = sum
        }
        return value
    }
}

extension StringProtocol {
    fileprivate var trimmingWhitespace: Substring {
        let text = Substring(self)
        let start = text.firstIndex { $0 != " " && $0 != "\t" } ?? text.endIndex
        let end = text.lastIndex { $0 != " " && $0 != "\t" }.map { text.index(after: $0) } ?? start
        return text[start..<Swift.max(start, end)]
    }
}
