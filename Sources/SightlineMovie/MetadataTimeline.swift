/// The pending values of one metadata track, turned into samples one fragment at a time.
///
/// Every span of the track's time is covered: by a group's sample while the group holds,
/// by the NULL sample otherwise. A group without a duration holds until the next group
/// starts. A value still valid when a fragment is cut is written again at the start of the
/// next fragment, because QuickTime values never carry over from one sample to the next.
struct MetadataTimeline {
    private struct Span {
        var start: Int64
        var end: Int64?
        var payload: [UInt8]
    }

    private var spans: [Span] = []
    /// Everything before this tick is written.
    private(set) var cursor: Int64 = 0

    enum Insertion { case queued, tooLate }

    /// Adds a group covering `[start, end)` (`end` nil: until the next group).
    mutating func insert(start: Int64, end: Int64?, payload: [UInt8]) -> Insertion {
        var start = start
        if start < cursor {
            guard let end, end > cursor else { return .tooLate }
            start = cursor
        }
        if let end, end <= start { return .queued }
        let span = Span(start: start, end: end, payload: payload)
        // Groups normally arrive in order: search from the back.
        var index = spans.endIndex
        while index > spans.startIndex, spans[index - 1].start > start { index -= 1 }
        if index > spans.startIndex, spans[index - 1].start == start {
            spans[index - 1] = span  // a later group for the same time replaces the earlier one
        } else {
            spans.insert(span, at: index)
        }
        return .queued
    }

    /// Moves the cursor without writing (the track starts at the movie's first frame).
    mutating func start(at tick: Int64) {
        cursor = tick
        spans.removeAll { ($0.end ?? .max) <= tick }
        if let first = spans.first, first.start < tick { spans[0].start = tick }
    }

    /// The samples `(payload, duration)` covering `[cursor, until)`, in order.
    mutating func samples(until: Int64, nullSample: [UInt8]) -> [(payload: [UInt8], duration: UInt32)] {
        guard until > cursor else { return [] }
        var samples: [(payload: [UInt8], duration: UInt32)] = []
        var time = cursor
        func emit(_ payload: [UInt8], to end: Int64) {
            guard end > time else { return }
            samples.append((payload, UInt32(clamping: end - time)))
            time = end
        }
        for (index, span) in spans.enumerated() {
            if span.start >= until { break }
            emit(nullSample, to: span.start)
            let nextStart = index + 1 < spans.count ? spans[index + 1].start : Int64.max
            let end = min(span.end ?? nextStart, nextStart, until)
            emit(span.payload, to: end)
        }
        emit(nullSample, to: until)
        cursor = until
        // Keep the spans that reach past the cut: they are written again next time.
        let nextStarts = spans.dropFirst().map(\.start) + [Int64.max]
        spans = zip(spans, nextStarts).compactMap { span, nextStart in
            let end = min(span.end ?? nextStart, nextStart)
            guard end > until else { return nil }
            var kept = span
            kept.start = max(span.start, until)
            return kept
        }
        return samples
    }
}
