import SightlineCore
import SightlineMovie

/// A source's audio on its way into the recorder's files, in step with the video.
///
/// The recorder hands it the frames as they arrive and, before each video frame it writes,
/// asks for the audio heard before that frame: so a file cut at a key frame ends with the
/// audio before it, and the next starts with the audio after. The first file's audio
/// starts at its first video frame's decode time at the earliest (its edit
/// skips the part of a frame before it).
///
/// Timestamps are checked on the way. As a frame arrives: a step back of more than a
/// second, or a jump ahead of more than ten seconds that lands more than ten seconds past
/// the newest video frame, is a new clock, and the audio is timed on from where it was
/// (re-based); such a frame could never be in step with the video, and one far ahead
/// would wait for it past what `pending` holds. As frames are written: one that overlaps
/// the one before (a step back of up to a second) is dropped; a gap lengthens the frame
/// before it, so what follows stays in step with the video, however long the sound was away
/// (a microphone unplugged for a minute, a stream's audio lost; the video, which may lag
/// the sound by seconds, is then near). Each is counted, and no sample ends up with a
/// negative or zero duration.
///
/// Not thread-safe: the recorder's thread.
struct RecorderAudio {
    /// The format of the newest frame: what a new file's sound track is declared with.
    private(set) var format: AudioFormat?
    /// Frames on the video's clock, waiting for the video frames they come before.
    private var pending: [(data: [UInt8], time: MediaTime, duration: MediaTime, format: AudioFormat)] = []
    /// The last frame given to a file, held until the next one says how long it lasts.
    private var held: MovieWriter.PassthroughSample?
    /// Added to the source's audio times since the last re-base.
    private var offset = MediaTime.zero
    /// Where the frames taken in so far end, on the video's clock.
    private var receivedUntil: MediaTime?
    /// Whether the frame before was dropped as an overlap: a step back is one jump, however
    /// many frames it takes to catch up.
    private var overlapping = false
    /// Frames waiting for a file at most (ten seconds at 48 kHz): older ones are dropped.
    static let maximumPending = 480

    /// The source says it has audio of `format`: the next file declares a sound track even
    /// if its first audio frame comes after its first video frame.
    mutating func expect(_ format: AudioFormat) {
        if self.format == nil { self.format = format }
    }

    /// Takes a frame in, timed on the video's clock; `newestVideo`: the newest video frame
    /// the recorder has. True when its format differs from the frames before (a new file
    /// must declare it).
    mutating func receive(
        _ data: [UInt8], time sourceTime: MediaTime, duration: MediaTime, format: AudioFormat,
        newestVideo: MediaTime?, counters: inout RecorderCounters
    ) -> Bool {
        let changed = format != self.format
        self.format = format
        var time = sourceTime + offset
        if let end = receivedUntil {
            let gap = (time - end).seconds
            if gap < -1 || (gap > 10 && newestVideo.map { (time - $0).seconds > 10 } ?? true) {
                // Another clock: go on from where the audio was.
                counters.audioJumps += 1
                offset = offset + (end - time)
                time = end
            }
        }
        receivedUntil = max(receivedUntil ?? time + duration, time + duration)
        pending.append((data, time, duration, format))
        if pending.count > Self.maximumPending {
            pending.removeFirst()
            counters.audioDropped["noFile", default: 0] += 1
        }
        return changed
    }

    /// Gives `writer`'s sound track `track` (nil: the file has none) the frames heard
    /// before `until` (nil: all), leaving out those before `fileStart`.
    mutating func write(
        until: MediaTime?, to writer: MovieWriter, track: Int?, trackFormat: AudioFormat?, fileStart: MediaTime,
        counters: inout RecorderCounters
    ) throws {
        while let next = pending.first, until.map({ next.time < $0 }) ?? true {
            pending.removeFirst()
            guard let track, next.format == trackFormat else {
                counters.audioDropped["noTrackInFile", default: 0] += 1
                continue
            }
            let time = next.time.converted(to: Int32(next.format.sampleRate))
            let duration = next.duration.converted(to: Int32(next.format.sampleRate))
            guard duration.value > 0 else {
                counters.audioDropped["malformed", default: 0] += 1
                continue
            }
            // A frame that starts before the file and ends in it (an encoder's priming
            // frame) is kept: the track's edit skips what comes before the file's start.
            if held == nil, time + duration <= fileStart {
                counters.audioDropped["beforeFile", default: 0] += 1
                continue
            }
            if var previous = held {
                let end = previous.time + MediaTime(value: Int64(previous.duration), timescale: time.timescale)
                let gap = time - end
                let halfFrame = MediaTime(value: duration.value / 2, timescale: time.timescale)
                if gap < MediaTime(value: -halfFrame.value, timescale: time.timescale) {
                    if !overlapping { counters.audioJumps += 1 }
                    overlapping = true
                    counters.audioDropped["overlap", default: 0] += 1
                    continue
                } else if halfFrame < gap {
                    counters.audioJumps += 1
                    previous.duration = UInt32(clamping: (time - previous.time).converted(to: time.timescale).value)
                }
                overlapping = false
                try writer.append(previous, toPassthroughTrack: track)
                counters.audioWritten += 1
            }
            held = MovieWriter.PassthroughSample(
                data: next.data, time: time, duration: UInt32(clamping: duration.value))
        }
    }

    /// A new run of the source, whose audio is timed on its own clock again. Call after the
    /// last run's file ended (nothing pending or held).
    mutating func startNewRun() {
        offset = .zero
        receivedUntil = nil
    }

    /// Writes the held frame into the file that is ending.
    mutating func endFile(_ writer: MovieWriter, track: Int?, counters: inout RecorderCounters) {
        defer { held = nil }
        guard let held, let track else { return }
        if (try? writer.append(held, toPassthroughTrack: track)) != nil { counters.audioWritten += 1 }
    }
}
