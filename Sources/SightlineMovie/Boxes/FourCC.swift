/// A four-character code: box types, handler types, sample-entry formats.
package struct FourCC: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    package let rawValue: UInt32

    package init(rawValue: UInt32) { self.rawValue = rawValue }

    package init(stringLiteral value: String) {
        let bytes = value.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) }
        precondition(bytes.count == 4, "a FourCC has four bytes: \(value)")
        rawValue = bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Printable codes as text (one byte per character, as QuickTime's `©xyz` needs), others
    /// (such as local key ids 1, 2, 3) as numbers.
    package var description: String {
        let bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: rawValue >> $0) }
        let printable = bytes.allSatisfy { ($0 >= 0x20 && $0 < 0x7F) || $0 == 0xA9 }
        return printable ? String(bytes.map { Character(Unicode.Scalar($0)) }) : String(rawValue)
    }
}
