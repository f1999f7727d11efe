import SightlineCore
import SightlineTesting
import Testing

@testable import SightlineCapture

/// What a control value or a device event from outside becomes, without a device: the
/// checks `--control`, `controls:` and the HTTP endpoint rely on, and the kernel's uevent
/// messages. The same controls on a real device: tools/test-camera-controls.py in vivid-run.
@Suite struct CameraControlTests {
    func control(
        _ name: String, type: String = "int", range: ClosedRange<Int64> = 0...255, step: UInt64 = 1,
        alias: String? = nil, menu: [(Int64, String)]? = nil, flags: [String] = []
    ) -> V4L2Control {
        V4L2Control(
            id: 1, name: name, label: name, alias: alias, type: type, minimum: range.lowerBound,
            maximum: range.upperBound, step: step, defaultValue: range.lowerBound, value: range.lowerBound,
            menu: menu?.map { V4L2Control.MenuItem(index: $0.0, name: $0.1) }, flags: flags)
    }

    @Test func namesAreV4L2CtlNames() {
        #expect(V4L2Control.variableName("Gain, Automatic") == "gain_automatic")
        #expect(V4L2Control.variableName("Read-Only Integer 32 Bits") == "read_only_integer_32_bits")
        #expect(V4L2Control.variableName("  White Balance Temperature, Auto ") == "white_balance_temperature_auto")
        #expect(V4L2Control.variableName("Exposure Time, Absolute") == "exposure_time_absolute")
    }

    @Test func numbersAreCheckedAgainstRangeAndStep() throws {
        let zoom = control("zoom_absolute", range: 100...500, step: 10, alias: "videoZoomFactor")
        #expect(try zoom.value(for: "250", device: "/dev/video0") == 250)
        #expect(
            throws: SightlineError.invalidArgument(
                "zoom_absolute=255 is out of range on /dev/video0: 100 to 500 in steps of 10")
        ) {
            try zoom.value(for: "255", device: "/dev/video0")
        }
        #expect(
            throws: SightlineError.invalidArgument(
                "zoom_absolute=90 is out of range on /dev/video0: 100 to 500 in steps of 10")
        ) {
            try zoom.value(for: "90", device: "/dev/video0")
        }
        #expect(
            throws: SightlineError.invalidArgument(
                "zoom_absolute=wide is not a value of zoom_absolute: 100 to 500 in steps of 10")
        ) {
            try zoom.value(for: "wide", device: "/dev/video0")
        }
    }

    /// AVFoundation's mode names stand for the V4L2 values a device offers: a webcam's
    /// automatic exposure is often only aperture priority (3).
    @Test func avFoundationModesAreTheDevicesValues() throws {
        let exposure = control(
            "auto_exposure", type: "menu", range: 0...3, alias: "exposureMode",
            menu: [(1, "Manual Mode"), (3, "Aperture Priority Mode")])
        #expect(try exposure.value(for: "locked", device: "d") == 1)
        #expect(try exposure.value(for: "custom", device: "d") == 1)
        #expect(try exposure.value(for: "continuousAutoExposure", device: "d") == 3)
        #expect(try exposure.value(for: "Manual Mode", device: "d") == 1)
        #expect(try exposure.value(for: "aperture_priority_mode", device: "d") == 3)
        #expect(
            throws: SightlineError.invalidArgument(
                "auto_exposure=0: d has no such item; items 1 (Manual Mode), 3 (Aperture Priority Mode)")
        ) {
            try exposure.value(for: "0", device: "d")
        }
        let torch = control(
            "led_mode", type: "menu", range: 0...1, alias: "torchMode", menu: [(0, "Off"), (1, "Flash")])
        #expect(throws: SightlineError.invalidArgument("d has no on for torchMode")) {
            try torch.value(for: "on", device: "d")
        }
        let focus = control("focus_automatic_continuous", type: "bool", range: 0...1, alias: "focusMode")
        #expect(try focus.value(for: "locked", device: "d") == 0)
        #expect(try focus.value(for: "on", device: "d") == 1)
        #expect(try focus.value(for: "FALSE", device: "d") == 0)
    }

    @Test func readOnlyTextAndButtons() throws {
        #expect(throws: SightlineError.invalidArgument("x is read-only on d")) {
            try control("x", flags: ["read-only"]).value(for: "1", device: "d")
        }
        #expect(throws: SightlineError.invalidArgument("s is a text control; Sightline sets numbers and menu items")) {
            try control("s", type: "str").value(for: "1", device: "d")
        }
        #expect(try control("b", type: "button").value(for: "anything", device: "d") == 1)
    }

    @Test func requestsAreNameEqualsValue() throws {
        #expect(try V4L2ControlRequest("brightness = 140") == V4L2ControlRequest(name: "brightness", value: "140"))
        #expect(try V4L2ControlRequest("test_pattern=100% Color=Squares").value == "100% Color=Squares")
        for bad in ["brightness", "=1", "brightness=", String(repeating: "a", count: 65) + "=1", ""] {
            #expect(throws: SightlineError.self) { try V4L2ControlRequest(bad) }
        }
    }

    /// Any text against any range, step and menu: an answer or one line, never a trap
    /// (the step check at the ends of the 64-bit range once overflowed).
    @Test func anyValueAgainstAnyControlIsAnswered() {
        var random = SplitMix(seed: 36)
        let texts = [
            "0", "1", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1e3", "0x10", "on",
            "locked", "continuousAutoExposure", "Menu Item 1", "", " ", "\u{0}", "٣", "+5", "--1",
        ]
        let bounds: [Int64] = [.min, .min + 1, -1, 0, 1, 255, .max - 1, .max]
        for _ in 0..<20_000 {
            var low = bounds[random.next(below: bounds.count)]
            var high = bounds[random.next(below: bounds.count)]
            if low > high { swap(&low, &high) }
            let type = ["int", "int64", "bool", "menu", "bitmask", "intmenu"][random.next(below: 6)]
            let menu: [(Int64, String)]? =
                type.hasSuffix("menu") ? [(0, "Menu Item 1"), (Int64.max, "x"), (-1, "")] : nil
            let subject = control(
                "c", type: type, range: low...high, step: [0, 1, 3, UInt64.max][random.next(below: 4)],
                alias: ["exposureMode", "torchMode", nil][random.next(below: 3)], menu: menu)
            if let value = try? subject.value(for: texts[random.next(below: texts.count)], device: "d") {
                #expect(menu.map { $0.contains { $0.0 == value } } ?? (low...high).contains(value))
            }
        }
    }

    @Test func ueventsOfCamerasAndMicrophones() throws {
        func event(_ fields: [String]) -> DeviceEvent? {
            DeviceEvent(uevent: Array(fields.joined(separator: "\0").utf8))
        }
        #expect(
            event([
                "add@/devices/platform/vivid.0/video4linux/video0", "ACTION=add",
                "DEVPATH=/devices/platform/vivid.0/video4linux/video0", "SUBSYSTEM=video4linux", "DEVNAME=video0",
                "SEQNUM=1234", "MAJOR=81", "MINOR=0",
            ]) == DeviceEvent(change: .added, kind: .camera, device: "/dev/video0"))
        #expect(
            event(["remove@/x", "ACTION=remove", "SUBSYSTEM=sound", "DEVNAME=snd/pcmC1D0c"])
                == DeviceEvent(change: .removed, kind: .microphone, device: "hw:1,0"))
        #expect(event(["ACTION=add", "SUBSYSTEM=sound", "DEVNAME=snd/pcmC1D0p"]) == nil)  // playback
        #expect(event(["ACTION=change", "SUBSYSTEM=video4linux", "DEVNAME=video0"]) == nil)
        #expect(event(["ACTION=add", "SUBSYSTEM=video4linux", "DEVNAME=v4l-subdev0"]) == nil)
        #expect(event(["ACTION=add", "SUBSYSTEM=video4linux", "DEVNAME=video0/../../etc"]) == nil)
        #expect(event(["ACTION=add", "SUBSYSTEM=sound", "DEVNAME=snd/pcmCxD99999999999999999999c"]) == nil)
    }

    /// Random and mutated messages never trap, and a device parsed is one of ours.
    @Test func anyUeventIsParsedOrIgnored() {
        var random = SplitMix(seed: 38)
        let seed = Array("add@/x\0ACTION=add\0SUBSYSTEM=sound\0DEVNAME=snd/pcmC1D0c\0".utf8)
        for _ in 0..<20_000 {
            var bytes = seed
            for _ in 0..<random.next(below: 8) {
                let position = random.next(below: bytes.count)
                switch random.next(below: 3) {
                case 0: bytes[position] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.remove(at: position)
                default: bytes.insert([0, 61, 68, 67, 255][random.next(below: 5)], at: position)
                }
                if bytes.isEmpty { bytes = [0] }
            }
            if let event = DeviceEvent(uevent: bytes) {
                #expect(event.device.hasPrefix("/dev/video") || event.device.hasPrefix("hw:"))
            }
        }
    }
}
