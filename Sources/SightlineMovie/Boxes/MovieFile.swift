import Glibc

/// A file descriptor with whole-buffer reads and writes that report errors as `MovieError`.
/// Not thread-safe: one owner at a time.
final class MovieFile {
    let path: String
    private var fd: Int32

    enum Mode { case read, update, create }

    init(path: String, mode: Mode) throws {
        self.path = path
        let flags: Int32 =
            switch mode {
            case .read: O_RDONLY
            case .update: O_RDWR
            case .create: O_RDWR | O_CREAT | O_TRUNC
            }
        fd = open(path, flags | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw MovieError.io(path: path, operation: "opening", code: errno) }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            Glibc.close(fd)
            throw MovieError.io(path: path, operation: "opening", code: EISDIR)
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    var size: UInt64 {
        get throws {
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                throw MovieError.io(path: path, operation: "reading the size of", code: errno)
            }
            return UInt64(info.st_size)
        }
    }

    func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let written = pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset) + off_t(done))
                if written < 0 {
                    if errno == EINTR { continue }
                    throw MovieError.io(path: path, operation: "writing", code: errno)
                }
                done += written
            }
        }
    }

    /// Reads exactly `count` bytes, or throws if the file ends first.
    func read(_ count: Int, at offset: UInt64) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try bytes.withUnsafeMutableBytes { buffer in
            var done = 0
            while done < count {
                let got = pread(fd, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if got < 0 {
                    if errno == EINTR { continue }
                    throw MovieError.io(path: path, operation: "reading", code: errno)
                }
                if got == 0 {
                    throw MovieError.malformed("the file ends inside a box at byte \(offset + UInt64(done))")
                }
                done += got
            }
        }
        return bytes
    }

    /// Takes the file's advisory lock, without waiting: false when another open of the file
    /// holds it. A writer holds it while it records, so recovery and retention, in this
    /// process or another, leave that file alone; the kernel drops it when the holder dies.
    func tryLock() -> Bool { flock(fd, LOCK_EX | LOCK_NB) == 0 }

    func sync() throws {
        guard fsync(fd) == 0 else { throw MovieError.io(path: path, operation: "syncing", code: errno) }
    }

    func truncate(to size: UInt64) throws {
        guard ftruncate(fd, off_t(size)) == 0 else {
            throw MovieError.io(path: path, operation: "truncating", code: errno)
        }
    }

    /// The top-level boxes as (type, start, size), stopping at the first box that does not
    /// fit in the file: `incomplete` then says where the damage starts.
    func topLevelBoxes() throws -> (boxes: [(type: FourCC, start: UInt64, size: UInt64)], incompleteAt: UInt64?) {
        let fileSize = try size
        var boxes: [(type: FourCC, start: UInt64, size: UInt64)] = []
        var offset: UInt64 = 0
        while offset < fileSize {
            guard fileSize - offset >= 8 else { return (boxes, offset) }
            var header = ByteReader(try read(Int(min(16, fileSize - offset)), at: offset))
            let size32 = try header.u32()
            let type = try header.fourCC()
            var size = UInt64(size32)
            if size32 == 1 {
                guard header.remaining >= 8 else { return (boxes, offset) }
                size = try header.u64()
                guard size >= 16 else { throw MovieError.malformed("box '\(type)' at byte \(offset) has size \(size)") }
            } else if size32 == 0 {
                size = fileSize - offset
            } else if size32 < 8 {
                throw MovieError.malformed("box '\(type)' at byte \(offset) has size \(size32)")
            }
            guard size <= fileSize - offset else { return (boxes, offset) }
            boxes.append((type, offset, size))
            offset += size
        }
        return (boxes, nil)
    }
}
