#!/usr/bin/python3
"""Runs the local test cluster's Python tests (test_*.py beside this file)
and ends with the line "N passed, N failed", as every test runner of the
project does. Before it, the ten slowest tests and their wall times, so
that a slow one shows in CI's log (no test depends on it)."""
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class Counting(unittest.TextTestResult):
    """Counts subtests one by one, as cmocka counts its tests."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.passed = 0
        self.walls = []
        self.t0 = 0.0

    def startTest(self, test):
        self.t0 = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.walls.append((time.monotonic() - self.t0, test.id()))

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1


def main():
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.discover(HERE, pattern="test_*.py")
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Counting, stream=sys.stdout)
    result = runner.run(suite)
    for wall, name in sorted(result.walls, reverse=True)[:10]:
        print("slow: %6.1f s %s" % (wall, name))
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    print("%d passed, %d failed" % (result.passed, failed))
    return 0 if failed == 0 and result.testsRun > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
