extension Duration {
    /// The duration in milliseconds, for timings, counters and C APIs that take milliseconds.
    package var milliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }
}

extension String {
    /// Decodes the NUL-terminated UTF-8 text a C API wrote into `buffer`.
    package init(nulTerminated buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension Duration {
    /// The duration in seconds, with its fraction.
    package var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
