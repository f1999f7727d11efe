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
/// Timestamps are checked on the way: a frame that overlaps the one before (a step back
/// of up to a second) is dropped; a gap lengthens the frame before it, so what follows
/// stays in step with the video, however long the sound was away (a microphone unplugged
/// for a minute, a stream's audio lost); a step back of more than a second, or a gap of
/// over ten seconds that ends over ten seconds past the newest video frame, is a new
/// clock, and the audio is timed on from where it was (re-based). Each is counted, and no sample ends up with a
/// negative or zero duration.
///
/// Not thread-safe: the recorder's thread.
struct RecorderAudio {
    /// The format of the newest frame: what a new file's sound track is declared with.
    private(set) var format: AudioFormat?
    private var pending: [(data: [UInt8], time: MediaTime, duration: MediaTime, format: AudioFormat)] = []
    /// The last frame given to a file, held until the next one says how long it lasts.
    private var held: MovieWriter.PassthroughSample?
    /// Added to the source's audio times since the last re-base.
    private var offset = MediaTime.zero
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

    /// Takes a frame in; true when its format differs from the frames before (a new file
    /// must declare it).
    mutating func receive(
        _ data: [UInt8], time: MediaTime, duration: MediaTime, format: AudioFormat, counters: inout RecorderCounters
    ) -> Bool {
        let changed = format != self.format
        self.format = format
        pending.append((data, time, duration, format))
        if pending.count > Self.maximumPending {
            pending.removeFirst()
            counters.audioDropped["noFile", default: 0] += 1
        }
        return changed
    }

    /// Gives `writer`'s sound track `track` (nil: the file has none) the frames heard
    /// before `until` (nil: all), leaving out those before `fileStart`. `newestVideo`: the
    /// newest video frame the recorder has, on whose clock the sound must stay.
    mutating func write(
        until: MediaTime?, newestVideo: MediaTime?, to writer: MovieWriter, track: Int?, trackFormat: AudioFormat?,
        fileStart: MediaTime, counters: inout RecorderCounters
    ) throws {
        while let next = pending.first, until.map({ next.time + offset < $0 }) ?? true {
            pending.removeFirst()
            guard let track, next.format == trackFormat else {
                counters.audioDropped["noTrackInFile", default: 0] += 1
                continue
            }
            var time = (next.time + offset).converted(to: Int32(next.format.sampleRate))
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
                // A gap of any length that ends before or near the newest video frame is
                // time the sound was away on the video's clock, even when it is written
                // only as the recording stops (the video may lag the sound by seconds);
                // only one that ends over ten seconds past the video is another clock.
                let pastVideo = newestVideo.map { (time - $0).seconds } ?? gap.seconds
                if gap.seconds < -1 || (gap.seconds > 10 && pastVideo > 10) {
                    // Another clock: go on from where the audio was.
                    counters.audioJumps += 1
                    offset = offset + (end - time)
                    time = end
                } else if gap < MediaTime(value: -halfFrame.value, timescale: time.timescale) {
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
    mutating func startNewRun() { offset = .zero }

    /// Writes the held frame into the file that is ending.
    mutating func endFile(_ writer: MovieWriter, track: Int?, counters: inout RecorderCounters) {
        defer { held = nil }
        guard let held, let track else { return }
        if (try? writer.append(held, toPassthroughTrack: track)) != nil { counters.audioWritten += 1 }
    }
}
