"""Tests of scripts/bench-table's compare: rounds alternate between the two binaries,
each side's file gets its own runs, and a failing bench saves nothing.

Run: python3 -m unittest discover -s scripts/tests   (from the repository root)
"""

import json
import os
import stat
import tempfile
import unittest

from load_script import load


bench_table = load("bench-table")


def fake_bench(directory, figure, log):
    """A `tollgate-bench` in `directory` that prints {"p50_us": figure, "n": 1} and logs
    its directory to `log` (one line per run)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "tollgate-bench")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
        f.write(f"echo {directory} >> {log}\n")
        f.write(f"echo 'a table first'; echo '{{\"p50_us\": {figure}, \"n\": 1}}'\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


class Compare(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="bench-table-test-")
        self.results = os.path.join(self.tmp, "results")
        self.saved_results = bench_table.RESULTS
        bench_table.RESULTS = self.results
        self.log = os.path.join(self.tmp, "runs.log")
        self.before = os.path.join(self.tmp, "before")
        self.after = os.path.join(self.tmp, "after")
        fake_bench(self.before, 50, self.log)
        fake_bench(self.after, 40, self.log)

    def tearDown(self):
        bench_table.RESULTS = self.saved_results

    def compare(self, *extra):
        bench_table.compare(["adm", "--before", self.before, "--before-commit", "abc1234",
                             "--after", self.after, "--rounds", "3", *extra, "--",
                             "{bin}/tollgate-bench", "admission", "--json"])

    def test_rounds_alternate_and_each_side_keeps_its_own_runs(self):
        self.compare("--keep", "p50")
        with open(self.log) as f:
            order = [os.path.basename(line.strip()) for line in f]
        self.assertEqual(order, ["before", "after"] * 3)
        with open(os.path.join(self.results, "adm-before.json")) as f:
            before = json.load(f)
        with open(os.path.join(self.results, "adm-after.json")) as f:
            after = json.load(f)
        self.assertEqual(before["commit"], "abc1234")
        self.assertEqual(before["figures"], [{"name": "p50_us", "values": [50, 50, 50]}])
        self.assertEqual(after["figures"], [{"name": "p50_us", "values": [40, 40, 40]}])
        self.assertEqual(before["command"], "target/bench-fast/tollgate-bench admission --json")
        self.assertIn("alternated", before["note"])

    def test_a_failing_bench_saves_nothing(self):
        with open(os.path.join(self.after, "tollgate-bench"), "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        with self.assertRaises(SystemExit):
            self.compare()
        self.assertFalse(os.path.exists(os.path.join(self.results, "adm-before.json")))

    def test_a_command_without_the_bin_placeholder_is_refused(self):
        with self.assertRaises(SystemExit) as refused:
            bench_table.compare(["adm", "--before", self.before, "--before-commit", "c",
                                 "--after", self.after, "--", "tollgate-bench", "org"])
        self.assertIn("{bin}", str(refused.exception))


if __name__ == "__main__":
    unittest.main()
