import SightlineCore

/// Timed metadata waiting for its video: the recorder writes a frame only after the
/// metadata delay, and the groups up to its time first, so that a frame's faces (which
/// arrive after it) are in the file with it. A value: it decides what waits, what is
/// refused and what is due, and the recorder writes what it hands out.
struct MetadataDelay {
    /// Why a group is not taken in.
    enum Refusal: String {
        /// More than a minute ahead of the newest video, or an hour behind it.
        case impossibleTime
        /// The delay is full.
        case overflow
    }

    /// How much may wait: a group counts 1, and each object (face) in it 1 more. Metadata
    /// may come up to a minute ahead of the video, so the bus could otherwise fill memory
    /// with groups of a thousand faces each; 8,192 is about 45 s of five faces a frame at
    /// 30 fps, against a delay of 1 s.
    static let weightLimit = 1 << 13

    /// Waiting groups in time order (equal times in arrival order), with their identifier.
    private var waiting: [(identifier: String, group: TimedMetadataGroup)] = []
    private var weight = 0
    /// The last group of each identifier that left the delay: what holds when a new file
    /// starts, which the file begins with.
    private(set) var current: [String: TimedMetadataGroup] = [:]

    /// Takes `group` in for `identifier`, or says why not.
    mutating func add(_ group: TimedMetadataGroup, for identifier: String, newestVideo: MediaTime?) -> Refusal? {
        let time = group.time
        if let newestVideo, (time - newestVideo).seconds > 60 || (newestVideo - time).seconds > 3600 {
            return .impossibleTime
        }
        let groupWeight = Self.weight(group)
        guard weight + groupWeight <= Self.weightLimit else { return .overflow }
        weight += groupWeight
        var index = waiting.endIndex
        while index > 0, waiting[index - 1].group.time > time { index -= 1 }
        waiting.insert((identifier, group), at: index)
        return nil
    }

    /// The groups due by `time` (all of them when nil), oldest first; each becomes its
    /// identifier's current group.
    mutating func take(upTo time: MediaTime?) -> [(identifier: String, group: TimedMetadataGroup)] {
        let due = time.map { time in waiting.prefix { $0.group.time <= time }.count } ?? waiting.count
        let taken = Array(waiting.prefix(due))
        waiting.removeFirst(due)
        for (identifier, group) in taken {
            weight -= Self.weight(group)
            current[identifier] = group
        }
        return taken
    }

    /// Makes `group` what holds for `identifier` (nil: nothing), as if it had just left the
    /// delay.
    mutating func setCurrent(_ group: TimedMetadataGroup?, for identifier: String) { current[identifier] = group }

    private static func weight(_ group: TimedMetadataGroup) -> Int {
        group.items.reduce(1) { weight, item in
            if case .records(let records) = item.value { return weight + records.count }
            return weight + 1
        }
    }
}
