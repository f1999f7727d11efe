/// Reads big-endian fields from a byte range, never past its end: every read that would
/// overrun throws instead, so hostile sizes and counts cannot crash the reader.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var position: Int
    let end: Int

    init(_ bytes: [UInt8], range: Range<Int>? = nil) {
        self.bytes = bytes
        let range = range ?? bytes.indices
        position = range.lowerBound
        end = range.upperBound
    }

    var remaining: Int { end - position }
    var isAtEnd: Bool { position >= end }

    private mutating func take(_ count: Int) throws -> Int {
        guard count >= 0, count <= remaining else {
            throw MovieError.malformed("a field runs past the end of its box (needs \(count) bytes, has \(remaining))")
        }
        defer { position += count }
        return position
    }

    mutating func u8() throws -> UInt8 { bytes[try take(1)] }
    mutating func u16() throws -> UInt16 {
        let at = try take(2)
        return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }
    mutating func u24() throws -> UInt32 {
        let at = try take(3)
        return UInt32(bytes[at]) << 16 | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2])
    }
    mutating func u32() throws -> UInt32 {
        let at = try take(4)
        return (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[at + $1]) }
    }
    mutating func u64() throws -> UInt64 {
        let at = try take(8)
        return (0..<8).reduce(0) { $0 << 8 | UInt64(bytes[at + $1]) }
    }
    mutating func i16() throws -> Int16 { Int16(bitPattern: try u16()) }
    mutating func i32() throws -> Int32 { Int32(bitPattern: try u32()) }
    mutating func i64() throws -> Int64 { Int64(bitPattern: try u64()) }
    mutating func f32() throws -> Float { Float(bitPattern: try u32()) }
    mutating func f64() throws -> Double { Double(bitPattern: try u64()) }
    mutating func fourCC() throws -> FourCC { FourCC(rawValue: try u32()) }
    mutating func skip(_ count: Int) throws { _ = try take(count) }
    mutating func read(_ count: Int) throws -> ArraySlice<UInt8> {
        let at = try take(count)
        return bytes[at..<at + count]
    }
    mutating func rest() -> ArraySlice<UInt8> {
        defer { position = end }
        return bytes[position..<end]
    }

    /// Reads an ISO full box's version and flags.
    mutating func versionAndFlags() throws -> (version: UInt8, flags: UInt32) {
        (try u8(), try u24())
    }

    /// Checks that `count` entries of `size` bytes fit before allocating room for them.
    func checkEntries(_ count: UInt32, size: Int, in box: FourCC) throws -> Int {
        let count = Int(count)
        guard count.multipliedReportingOverflow(by: size).partialValue <= remaining, count <= remaining else {
            throw MovieError.malformed(
                "'\(box)' declares \(count) entries but holds room for \(remaining / max(size, 1))")
        }
        return count
    }
}

/// A box found in a buffer: its type, where it starts, and its payload range.
struct Box {
    let type: FourCC
    let start: Int
    let payload: Range<Int>

    var end: Int { payload.upperBound }

    /// The child boxes of `range`, in order. Sizes that overflow the range throw; a size of 0
    /// means "to the end of the range", as at the top of a file.
    static func children(of bytes: [UInt8], in range: Range<Int>) throws -> [Box] {
        var boxes: [Box] = []
        var reader = ByteReader(bytes, range: range)
        while reader.remaining >= 8 {
            let start = reader.position
            let size32 = try reader.u32()
            let type = try reader.fourCC()
            var size = UInt64(size32)
            if size32 == 1 {
                size = try reader.u64()
            } else if size32 == 0 {
                size = UInt64(range.upperBound - start)
            }
            let header = reader.position - start
            guard size >= UInt64(header), size <= UInt64(range.upperBound - start) else {
                throw MovieError.malformed("box '\(type)' at byte \(start) has size \(size), outside its parent")
            }
            let end = start + Int(size)
            boxes.append(Box(type: type, start: start, payload: reader.position..<end))
            try reader.skip(end - reader.position)
        }
        return boxes
    }
}

extension Array where Element == Box {
    func first(_ type: FourCC) -> Box? { first { $0.type == type } }
    func all(_ type: FourCC) -> [Box] { filter { $0.type == type } }
}
