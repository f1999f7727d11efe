"""What the serve, crash, soak and microphone tests share: counting checks, free ports,
waiting on conditions, and reading Prometheus text."""
import re
import sys
import socket
import time


class Checks:
    """Counts checks; a failed one prints its name and what was seen instead."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, condition, detail=""):
        if condition:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAILED: {name} {detail}"[:2000])

    def finish(self, what):
        """Prints the tally and exits: 1 when anything failed."""
        print(f"{self.passed} passed, {self.failed} failed: {what}")
        sys.exit(1 if self.failed else 0)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, seconds, what):
    """Polls `condition` until it holds; fails naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metric_values(text, name):
    """Every sample of metric `name`: {frozenset of (label, value): number}."""
    values = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match and match.group(1) == name:
            labels = frozenset(LABEL.findall(match.group(3) or ""))
            values[labels] = float(match.group(4))
    return values


def metric(text, name, **labels):
    """One sample's value, by its labels; 0 when it is not there."""
    return metric_values(text, name).get(frozenset(labels.items()), 0.0)
