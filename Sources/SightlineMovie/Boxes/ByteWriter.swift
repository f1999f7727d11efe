/// Builds big-endian box bytes in memory.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    var count: Int { bytes.count }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }
    mutating func u24(_ value: UInt32) {
        bytes.append(UInt8(truncatingIfNeeded: value >> 16))
        bytes.append(UInt8(truncatingIfNeeded: value >> 8))
        bytes.append(UInt8(truncatingIfNeeded: value))
    }
    mutating func u32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift)))
        }
    }
    mutating func u64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
    mutating func i16(_ value: Int16) { u16(UInt16(bitPattern: value)) }
    mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }
    mutating func f32(_ value: Float) { u32(value.bitPattern) }
    mutating func f64(_ value: Double) { u64(value.bitPattern) }
    mutating func fourCC(_ code: FourCC) { u32(code.rawValue) }
    mutating func append<C: Collection>(_ data: C) where C.Element == UInt8 { bytes.append(contentsOf: data) }
    mutating func zeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }
    /// A QuickTime Pascal string: one length byte, then the bytes.
    mutating func pascalString(_ text: String) {
        let utf8 = Array(text.utf8.prefix(255))
        u8(UInt8(utf8.count))
        append(utf8)
    }

    /// A box whose 32-bit size is filled in after `body` has written its payload.
    mutating func box(_ type: FourCC, _ body: (inout ByteWriter) -> Void) {
        let start = bytes.count
        u32(0)
        fourCC(type)
        body(&self)
        patchSize(at: start)
    }

    /// A box with ISO's version and 24-bit flags before the payload.
    mutating func fullBox(_ type: FourCC, version: UInt8, flags: UInt32, _ body: (inout ByteWriter) -> Void) {
        box(type) { w in
            w.u8(version)
            w.u24(flags)
            body(&w)
        }
    }

    private mutating func patchSize(at start: Int) {
        let size = UInt32(bytes.count - start)
        for index in 0..<4 { bytes[start + index] = UInt8(truncatingIfNeeded: size >> UInt32(24 - 8 * index)) }
    }
}
