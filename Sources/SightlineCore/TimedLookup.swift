extension RandomAccessCollection where Index == Int {
    /// The last element whose start is at or before `time` (a microsecond of slack for
    /// times that went through floating point), found by binary search in elements sorted
    /// by start: the timed metadata group in force at a time, once its end is checked.
    package func last(startingAtOrBefore time: Double, start: (Element) -> Double) -> Element? {
        var low = startIndex
        var high = endIndex
        while low < high {
            let middle = (low + high) / 2
            if start(self[middle]) <= time + 1e-6 { low = middle + 1 } else { high = middle }
        }
        return low > startIndex ? self[low - 1] : nil
    }
}
