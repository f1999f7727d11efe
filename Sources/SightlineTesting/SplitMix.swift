/// A small deterministic random generator (SplitMix64), so that a failing fuzz run can be
/// repeated from its seed.
package struct SplitMix {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    package mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// A value drawn evenly from `range` (53 random bits).
    package mutating func next(in range: ClosedRange<Double>) -> Double {
        range.lowerBound + (range.upperBound - range.lowerBound) * Double(next() >> 11) / 0x1p53
    }
}
