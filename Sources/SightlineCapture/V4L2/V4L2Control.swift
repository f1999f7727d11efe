import CV4L2
import Foundation
import SightlineCore

/// One of a camera's controls as V4L2 describes it (`VIDIOC_QUERY_EXT_CTRL`, menus from
/// `VIDIOC_QUERYMENU`), with its value now: what `v4l2-ctl --list-ctrls` shows, by the same
/// names, plus the name AVFoundation gives it where it has one (`exposureMode`).
package struct V4L2Control: Sendable, Codable, Equatable {
    package struct MenuItem: Sendable, Codable, Equatable {
        package var index: Int64
        /// The item's name; for an integer menu, its value.
        package var name: String
    }

    package var id: UInt32
    /// v4l2-ctl's name: the driver's, lower case, words joined by `_` (`auto_exposure`).
    package var name: String
    /// The driver's own name (`Auto Exposure`).
    package var label: String
    /// `AVCaptureDevice`'s name for it (`exposureMode`, `lensPosition`), where it has one.
    package var alias: String?
    /// v4l2-ctl's type names: `int`, `bool`, `menu`, `intmenu`, `button`, `int64`, `bitmask`, `str`.
    package var type: String
    package var minimum: Int64
    package var maximum: Int64
    package var step: UInt64
    package var defaultValue: Int64
    /// nil for buttons and strings, and for write-only controls.
    package var value: Int64?
    package var menu: [MenuItem]?
    /// v4l2-ctl's flag names: `inactive` (exposure time while exposure is automatic),
    /// `read-only`, `grabbed` (busy while streaming), `slider`, `volatile`, …
    package var flags: [String]

    package var isInactive: Bool { flags.contains("inactive") }
    package var isWritable: Bool { !flags.contains("read-only") && !flags.contains("disabled") }

    /// How a user sees it in one line: `brightness (int) 0-255 step 1 default 128 = 200`.
    package var summary: String {
        var text = "\(name)"
        if let alias { text += " [\(alias)]" }
        text += " (\(type))"
        switch type {
        case "menu", "intmenu":
            text += " " + (menu ?? []).map { "\($0.index)=\($0.name)" }.joined(separator: " ")
        case "int", "int64", "bitmask":
            text += " \(minimum)-\(maximum)" + (step > 1 ? " step \(step)" : "")
        default: break
        }
        if type != "button", type != "str" { text += " default \(defaultValue)" }
        if let value { text += " = \(value)" }
        let shown = flags.filter { $0 != "slider" && $0 != "update" }
        if !shown.isEmpty { text += " (\(shown.joined(separator: ", ")))" }
        return text
    }

    /// The names `AVCaptureDevice` uses for the same settings.
    static let aliases: [UInt32: String] = [
        UInt32(V4L2_CID_FOCUS_AUTO): "focusMode",
        UInt32(V4L2_CID_FOCUS_ABSOLUTE): "lensPosition",
        UInt32(V4L2_CID_EXPOSURE_AUTO): "exposureMode",
        UInt32(V4L2_CID_EXPOSURE_ABSOLUTE): "exposureDuration",
        UInt32(V4L2_CID_AUTO_EXPOSURE_BIAS): "exposureTargetBias",
        UInt32(V4L2_CID_ISO_SENSITIVITY): "iso",
        UInt32(V4L2_CID_AUTO_WHITE_BALANCE): "whiteBalanceMode",
        UInt32(V4L2_CID_WHITE_BALANCE_TEMPERATURE): "whiteBalanceTemperature",
        UInt32(V4L2_CID_FLASH_LED_MODE): "torchMode",
        UInt32(V4L2_CID_FLASH_TORCH_INTENSITY): "torchLevel",
        UInt32(V4L2_CID_ZOOM_ABSOLUTE): "videoZoomFactor",
    ]

    /// AVFoundation's mode names, as values of the controls that switch a mode: the V4L2
    /// values they stand for, the first the device offers.
    static let aliasValues: [String: [String: [Int64]]] = [
        "focusMode": ["locked": [0], "continuousAutoFocus": [1]],
        "whiteBalanceMode": ["locked": [0], "continuousAutoWhiteBalance": [1]],
        // V4L2_EXPOSURE_AUTO 0, _MANUAL 1, _SHUTTER_PRIORITY 2, _APERTURE_PRIORITY 3 (what
        // most webcams call automatic).
        "exposureMode": ["locked": [1], "custom": [1], "continuousAutoExposure": [0, 3]],
        // V4L2_FLASH_LED_MODE_NONE 0, _FLASH 1, _TORCH 2.
        "torchMode": ["off": [0], "on": [2]],
    ]

    /// v4l2-ctl's `name2var`: letters and digits kept in lower case, every run of anything
    /// else one `_`, none at either end.
    static func variableName(_ label: String) -> String {
        var name = ""
        var pendingUnderscore = false
        for character in label {
            if character.isASCII, character.isLetter || character.isNumber {
                if pendingUnderscore { name += "_" }
                pendingUnderscore = false
                name += character.lowercased()
            } else if !name.isEmpty {
                pendingUnderscore = true
            }
        }
        return name
    }

    // MARK: Values

    /// The value `text` asks for: a number, `true`/`false`/`on`/`off` for a switch, a
    /// menu item's name or index, or one of AVFoundation's mode names; checked against the
    /// range, the step and the menu, with one line naming what is allowed when it is not.
    package func value(for text: String, device: String) throws -> Int64 {
        guard isWritable else { throw refusal("\(name) is read-only on \(device)") }
        if type == "button" { return 1 }
        if type == "str" { throw refusal("\(name) is a text control; Sightline sets numbers and menu items") }
        if let alias, let values = Self.aliasValues[alias]?.first(where: { $0.key.lowercased() == text.lowercased() }) {
            guard let offered = values.value.first(where: { offers($0) }) else {
                throw refusal("\(device) has no \(values.key) for \(alias)")
            }
            return offered
        }
        let lowered = text.lowercased()
        var value: Int64?
        if type == "bool" {
            value = ["true": 1, "on": 1, "yes": 1, "false": 0, "off": 0, "no": 0][lowered]
        }
        if let menu, value == nil {
            value = menu.first { $0.name.lowercased() == lowered || Self.variableName($0.name) == lowered }?.index
        }
        guard let number = value ?? Int64(text) else {
            throw refusal("\(name)=\(text) is not a value of \(name): \(allowed)")
        }
        if let menu {
            guard menu.contains(where: { $0.index == number }) else {
                throw refusal("\(name)=\(text): \(device) has no such item; \(allowed)")
            }
        } else if number < minimum || number > maximum
            // The distance fits 64 bits without a sign, whatever the range; wrapping finds it.
            || (step > 1 && UInt64(bitPattern: number &- minimum) % step != 0)
        {
            throw refusal("\(name)=\(text) is out of range on \(device): \(allowed)")
        }
        return number
    }

    private func offers(_ value: Int64) -> Bool {
        menu.map { $0.contains { $0.index == value } } ?? (minimum...maximum).contains(value)
    }

    /// What the control takes, for error lines.
    private var allowed: String {
        if let menu { return "items " + menu.map { "\($0.index) (\($0.name))" }.joined(separator: ", ") }
        if type == "bool" { return "0 or 1 (or on/off)" }
        return "\(minimum) to \(maximum)" + (step > 1 ? " in steps of \(step)" : "")
    }

    private func refusal(_ line: String) -> SightlineError { .invalidArgument(line) }
}

/// `NAME=VALUE`, as `--control` and the configuration's `controls:` give it; the name is
/// v4l2-ctl's or AVFoundation's.
package struct V4L2ControlRequest: Sendable, Hashable, Codable, CustomStringConvertible {
    package var name: String
    package var value: String

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    package init(_ text: String) throws {
        let parts = text.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, parts[0].count <= 64, parts[1].count <= 64
        else {
            throw SightlineError.invalidArgument(
                "control '\(text.prefix(80))' is not NAME=VALUE, for example brightness=140 or exposureMode=locked")
        }
        self.init(name: parts[0], value: parts[1])
    }

    package var description: String { "\(name)=\(value)" }
}
