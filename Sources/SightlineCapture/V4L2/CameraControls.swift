import CV4L2
import Foundation
import Logging
import SightlineCore
import Synchronization

/// A camera's controls while a source has it open, as `AVCaptureDevice` has focus, exposure
/// and white balance: listed, changed together after the driver has checked them
/// (`VIDIOC_TRY_EXT_CTRLS`, then `VIDIOC_S_EXT_CTRLS`), read back, and set again each time
/// the device is opened again, because cameras forget them when unplugged.
///
/// The source's capture thread attaches the device after opening it and detaches it before
/// closing it; any thread may list or change the controls meanwhile (the HTTP endpoint).
package final class CameraControls: Sendable {
    package let path: String
    private let logger: Logger
    private let state: Mutex<State>

    private struct State {
        var fd: Int32 = -1
        /// What was asked for, in order, one entry a control; set again on every attach.
        var wanted: [V4L2ControlRequest]
        /// The wanted controls' values as the driver kept them, by name.
        var values: [String: Int64] = [:]
        var onChange: (@Sendable (_ values: [String: Int64], _ change: String) -> Void)?
    }

    init(path: String, wanted: [V4L2ControlRequest], logger: Logger) {
        self.path = path
        self.logger = logger
        state = Mutex(State(wanted: wanted))
    }

    /// Called with the controls' values and a line saying what changed, after every change
    /// through `set` (any thread: the caller's).
    package func onChange(_ body: @escaping @Sendable (_ values: [String: Int64], _ change: String) -> Void) {
        state.withLock { $0.onChange = body }
    }

    /// The wanted controls' values as the driver kept them.
    package var values: [String: Int64] { state.withLock { $0.values } }

    /// What was asked for, configured and changed since, in order: what a source opened
    /// again takes over.
    package var wanted: [V4L2ControlRequest] { state.withLock { $0.wanted } }

    /// `values` for a status message: nil when no control was set.
    package var reported: [String: Int64]? {
        let values = values
        return values.isEmpty ? nil : values
    }

    /// Every control of the device, with its value now. Throws while the device is away.
    package func list() throws -> [V4L2Control] {
        try state.withLock { state in
            guard state.fd >= 0 else { throw unavailable("the camera is not open now (reconnecting)") }
            return Self.list(state.fd)
        }
    }

    /// Sets `requests` together, after checking each against the device and the driver;
    /// throws one line, and changes nothing, when one is refused. They are set again after
    /// every reconnect. Returns the device's controls afterwards.
    @discardableResult
    package func set(_ requests: [V4L2ControlRequest], by who: String) throws -> [V4L2Control] {
        let (controls, values, onChange) = try state.withLock { state in
            guard state.fd >= 0 else { throw unavailable("the camera is not open now (reconnecting)") }
            let kept = try Self.apply(requests, fd: state.fd, path: path, logger: logger)
            for request in requests {
                state.wanted.removeAll { $0.name.lowercased() == request.name.lowercased() }
                state.wanted.append(request)
            }
            state.values.merge(kept) { $1 }
            return (Self.list(state.fd), state.values, state.onChange)
        }
        let change = "controls set by \(who): \(requests.map(\.description).joined(separator: " "))"
        logger.notice("\(change)", metadata: ["device": "\(path)"])
        onChange?(values, change)
        return controls
    }

    /// The device is open on `fd`: sets the wanted controls. A control refused is logged,
    /// and the camera runs with the values it has. Capture thread.
    func attach(_ fd: Int32) {
        state.withLock { state in
            state.fd = fd
            guard !state.wanted.isEmpty else { return }
            do {
                state.values = try Self.apply(state.wanted, fd: fd, path: path, logger: logger)
                logger.info(
                    "controls set",
                    metadata: [
                        "device": "\(path)",
                        "controls":
                            "\(state.values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))",
                    ])
            } catch {
                logger.error(
                    "controls not set; the camera runs with the values it has",
                    metadata: ["device": "\(path)", "error": "\(error)"])
            }
        }
    }

    /// The device is about to be closed. Capture thread.
    func detach() { state.withLock { $0.fd = -1 } }

    private func unavailable(_ reason: String) -> SightlineError {
        .sourceUnavailable(source: path, reason: reason)
    }

    // MARK: The ioctls

    /// Every control of the device on `fd` (compound controls, which hold arrays, aside).
    package static func list(_ fd: Int32) -> [V4L2Control] {
        var controls: [V4L2Control] = []
        var query = v4l2_query_ext_ctrl()
        query.id = UInt32(V4L2_CTRL_FLAG_NEXT_CTRL) | UInt32(V4L2_CTRL_FLAG_NEXT_COMPOUND)
        while controls.count < 1024, cv4l2_device_ioctl(fd, cv4l2_query_ext_ctrl(), &query) == 0 {
            defer { query.id |= UInt32(V4L2_CTRL_FLAG_NEXT_CTRL) | UInt32(V4L2_CTRL_FLAG_NEXT_COMPOUND) }
            guard let type = typeNames[query.type], query.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) == 0 else { continue }
            let label = cString(&query.name)
            var control = V4L2Control(
                id: query.id, name: V4L2Control.variableName(label), label: label,
                alias: V4L2Control.aliases[query.id], type: type, minimum: query.minimum, maximum: query.maximum,
                step: query.step, defaultValue: query.default_value, value: nil, menu: nil,
                flags: flagNames.filter { query.flags & $0.flag != 0 }.map(\.name))
            if type == "menu" || type == "intmenu" { control.menu = menu(fd, query) }
            if !["button", "str"].contains(type), query.flags & UInt32(V4L2_CTRL_FLAG_WRITE_ONLY) == 0 {
                control.value = read(fd, query.id, type: type)
            }
            controls.append(control)
        }
        return controls
    }

    private static let typeNames: [UInt32: String] = [
        V4L2_CTRL_TYPE_INTEGER.rawValue: "int", V4L2_CTRL_TYPE_BOOLEAN.rawValue: "bool",
        V4L2_CTRL_TYPE_MENU.rawValue: "menu", V4L2_CTRL_TYPE_BUTTON.rawValue: "button",
        V4L2_CTRL_TYPE_INTEGER64.rawValue: "int64", V4L2_CTRL_TYPE_STRING.rawValue: "str",
        V4L2_CTRL_TYPE_BITMASK.rawValue: "bitmask", V4L2_CTRL_TYPE_INTEGER_MENU.rawValue: "intmenu",
    ]

    /// v4l2-ctl's names for the flags.
    private static let flagNames: [(flag: UInt32, name: String)] = [
        (UInt32(V4L2_CTRL_FLAG_GRABBED), "grabbed"), (UInt32(V4L2_CTRL_FLAG_READ_ONLY), "read-only"),
        (UInt32(V4L2_CTRL_FLAG_UPDATE), "update"), (UInt32(V4L2_CTRL_FLAG_INACTIVE), "inactive"),
        (UInt32(V4L2_CTRL_FLAG_SLIDER), "slider"), (UInt32(V4L2_CTRL_FLAG_WRITE_ONLY), "write-only"),
        (UInt32(V4L2_CTRL_FLAG_VOLATILE), "volatile"),
        (UInt32(V4L2_CTRL_FLAG_EXECUTE_ON_WRITE), "execute-on-write"),
    ]

    private static func menu(_ fd: Int32, _ query: v4l2_query_ext_ctrl) -> [V4L2Control.MenuItem] {
        guard query.minimum >= 0, query.maximum < 256, query.minimum <= query.maximum else { return [] }
        return (query.minimum...query.maximum).compactMap { index in
            var item = v4l2_querymenu()
            item.id = query.id
            item.index = UInt32(index)
            // Menus may skip indices: those the driver does not offer fail.
            guard cv4l2_device_ioctl(fd, cv4l2_querymenu(), &item) == 0 else { return nil }
            let name = query.type == V4L2_CTRL_TYPE_INTEGER_MENU.rawValue ? String(item.value) : cString(&item.name)
            return V4L2Control.MenuItem(index: index, name: name)
        }
    }

    /// A bitmask is 32 bits without a sign; an int64 has a field of its own.
    private static func read(_ fd: Int32, _ id: UInt32, type: String) -> Int64? {
        var control = v4l2_ext_control()
        control.id = id
        let done = withUnsafeMutablePointer(to: &control) { pointer in
            var request = v4l2_ext_controls()
            request.which = UInt32(V4L2_CTRL_WHICH_CUR_VAL)
            request.count = 1
            request.controls = pointer
            return cv4l2_device_ioctl(fd, cv4l2_g_ext_ctrls(), &request) == 0
        }
        guard done else { return nil }
        switch type {
        case "int64": return control.value64
        case "bitmask": return Int64(UInt32(bitPattern: control.value))
        default: return Int64(control.value)
        }
    }

    /// A request checked against the device: its control and the value for it.
    private typealias Resolved = (control: V4L2Control, value: Int64)

    /// Checks `requests` against the device's controls, has the driver try them, sets them
    /// in one call, and returns what the driver kept; a driver that clamped a value is
    /// logged with the value it kept.
    static func apply(
        _ requests: [V4L2ControlRequest], fd: Int32, path: String, logger: Logger
    ) throws -> [String: Int64] {
        let resolved = try resolve(requests, among: list(fd), path: path)
        try send(resolved, fd: fd, path: path)
        var kept: [String: Int64] = [:]
        for item in resolved where item.control.type != "button" {
            guard let value = read(fd, item.control.id, type: item.control.type) else { continue }
            kept[item.control.name] = value
            if value != item.value {
                logger.warning(
                    "the driver kept another value",
                    metadata: [
                        "device": "\(path)", "control": "\(item.control.name)", "asked": "\(item.value)",
                        "kept": "\(value)",
                    ])
            }
        }
        return kept
    }

    /// Each request's control (by v4l2-ctl's name, AVFoundation's or the driver's) and
    /// value, automatic modes first: a camera takes an exposure time only once automatic
    /// exposure is off, and V4L2 sets a batch in its order.
    private static func resolve(
        _ requests: [V4L2ControlRequest], among controls: [V4L2Control], path: String
    ) throws -> [Resolved] {
        let resolved: [Resolved] = try requests.map { request in
            let wanted = request.name.lowercased()
            guard
                let control = controls.first(where: {
                    $0.name == wanted || $0.alias?.lowercased() == wanted || $0.label.lowercased() == wanted
                })
            else {
                let names = controls.map { control in control.alias.map { "\(control.name) (\($0))" } ?? control.name }
                throw SightlineError.invalidArgument(
                    "\(path) has no control '\(request.name)'; it has \(names.joined(separator: ", "))")
            }
            return (control, try control.value(for: request.value, device: path))
        }
        return resolved.filter { isModeSwitch($0.control) } + resolved.filter { !isModeSwitch($0.control) }
    }

    /// Has the driver check the batch, then set it; throws the one line saying which
    /// control it refused and why.
    private static func send(_ resolved: [Resolved], fd: Int32, path: String) throws {
        var batch = resolved.map { item in
            var control = v4l2_ext_control()
            control.id = item.control.id
            if item.control.type == "int64" {
                control.value64 = item.value
            } else {
                control.value = Int32(truncatingIfNeeded: item.value)  // checked against the range; a bitmask's top bit
            }
            return control
        }
        for (request, name) in [(cv4l2_try_ext_ctrls(), "checked"), (cv4l2_s_ext_ctrls(), "set")] {
            var failedIndex = -1
            let result = batch.withUnsafeMutableBufferPointer { buffer in
                var controls = v4l2_ext_controls()
                controls.which = UInt32(V4L2_CTRL_WHICH_CUR_VAL)
                controls.count = UInt32(buffer.count)
                controls.controls = buffer.baseAddress
                let result = cv4l2_device_ioctl(fd, request, &controls)
                failedIndex = Int(controls.error_idx)
                return result
            }
            guard result != 0 else { continue }
            let failure = errno
            // The driver names the control it refused, unless it refused the batch before
            // touching any (error_idx == count): then the busy ones (grabbed while
            // streaming) are the likely cause.
            let grabbed = resolved.filter { $0.control.flags.contains("grabbed") }
            let named =
                resolved.indices.contains(failedIndex)
                ? [resolved[failedIndex]] : failure == EBUSY && !grabbed.isEmpty ? grabbed : resolved
            let culprit = named.map { "\($0.control.name)=\($0.value)" }.joined(separator: " ")
            let reason =
                switch failure {
                case EBUSY: "the device is busy (EBUSY)"
                case EACCES: "the control cannot be written now (EACCES)"
                case ERANGE: "out of the driver's range (ERANGE)"
                default: "\(String(cString: strerror(failure))) (errno \(failure))"
                }
            throw SightlineError.invalidArgument(
                "\(path) refused \(culprit) when it was \(name): \(reason); nothing was changed")
        }
    }

    private static func isModeSwitch(_ control: V4L2Control) -> Bool {
        (control.alias.map { V4L2Control.aliasValues[$0] != nil } ?? false)
            || (["bool", "menu"].contains(control.type) && control.name.contains("auto"))
    }
}
