"""Tests of scripts/admission-profile's reading of `perf script` output, on planted lines.

Run: python3 -m unittest discover -s scripts/tests   (from the repository root)
"""

import unittest

from load_script import load


profile = load("admission-profile")

# perf script -F comm,pid,tid,time,ip,dso
SAMPLES = """\
 tollgate-bench   100/100   10.000000:  ffffffff8224215b ([kernel.kallsyms])
 tollgate   50/51   10.001000:  55aa ([unknown])
 swapper     0/0     10.002000:  ffffffff8224215b ([kernel.kallsyms])
 tollgate-bench   201/201   10.100000:  55aa (/work/target/bench-fast/tollgate-bench)
 tollgate-bench   202/202   10.101000:  ffffffff81 ([kernel.kallsyms])
 tollgate-bench   100/120   10.100500:  ffffffff81 ([kernel.kallsyms])
 kdamond.0   7/7   10.103000:  ffffffff81 ([kernel.kallsyms])
 tollgate-bench   301/301   11.000000:  ffffffff81 ([kernel.kallsyms])
 tollgate-actors   50/52   11.001000:  ffffffff81 ([kernel.kallsyms])
 tollgate-client   302/310   11.002000:  55aa (/work/target/bench-fast/tollgate-bench)
 swapper     0/0     11.001200:  ffffffff8224215b ([kernel.kallsyms])
 tollgate-actors   50/52   11.001500:  55aa (/work/target/bench-fast/tollgate)
this line is not a sample
"""

# perf script -F comm,pid,tid,trace (raw_syscalls:sys_enter)
SYSCALLS = """\
 tollgate-bench 100/100 NR 1 (1, 2, 3)
 tollgate-bench 201/201 NR 44 (7, 8)
 tollgate-bench 201/201 NR 45 (7, 8)
 tollgate-bench 202/202 NR 44 (7, 8)
 tollgate-bench 100/121 NR 45 (7, 8)
 perf 90/90 NR 0 (1)
 tollgate-bench 301/301 NR 44 (7, 8)
 tollgate-bench 301/301 NR 232 (3, 4, 5, ffffffff, 0)
 tollgate-client 302/310 NR 232 (3, 4, 5, 0, 0)
 tollgate-actors 50/52 NR 45 (7, 8)
 tollgate-actors 50/52 NR 44 (7, 8)
"""


class ReadingPerfOutput(unittest.TestCase):
    def test_samples_keep_their_pid_time_and_whether_the_kernel_ran(self):
        samples = profile.parse_samples(SAMPLES.splitlines())
        self.assertEqual(len(samples), 12)
        self.assertEqual(samples[0], (True, 100, 10.0, True))
        self.assertEqual(samples[1], (True, 50, 10.001, False))
        self.assertEqual(samples[2], (False, 0, 10.002, True))
        self.assertEqual(samples[5], (True, 100, 10.1005, True))
        self.assertEqual(samples[6], (False, 7, 10.103, True))

    def test_the_bench_is_the_lowest_pid_and_workers_come_echo_first(self):
        samples = profile.parse_samples(SAMPLES.splitlines())
        bench, echo, tollgate = profile.roles(samples, coordinator_pid=50, processes=2)
        self.assertEqual(bench, 100)
        self.assertEqual(echo, {201, 202})
        self.assertEqual(tollgate, {301, 302})

    def test_a_trimmed_window_cuts_each_end(self):
        samples = [(True, 1, float(t), False) for t in range(10)]
        self.assertEqual(profile.window(samples, {1}), (0.0, 9.0))
        self.assertEqual(profile.window(samples, {1}, trim=0.2), (2.0, 7.0))
        self.assertEqual(profile.window(samples, {2}), (0.0, -1.0))

    def test_cpu_is_charged_per_operation_to_each_part_and_idle_counted_per_window(self):
        samples = profile.parse_samples(SAMPLES.splitlines())
        rows, idle = profile.cpu_table(samples, coordinator_pid=50, processes=2, ops=1)
        per = 1e6 / profile.FREQ
        self.assertEqual(rows["tollgate client"], (2 * per, 1 * per))
        # The coordinator's sample before tollgate's window is not charged.
        self.assertEqual(rows["tollgate coordinator"], (2 * per, 1 * per))
        self.assertEqual(rows["echo client"], (2 * per, 1 * per))
        # The bench's own sample before the echo's window is not the echo server's.
        self.assertEqual(rows["echo server"], (1 * per, 1 * per))
        self.assertEqual(idle["echo"], 0.0)
        self.assertEqual(idle["tollgate"], 20.0)

    def test_syscalls_are_counted_per_operation_by_name(self):
        calls = profile.parse_syscalls(SYSCALLS.splitlines())
        self.assertEqual(len(calls), 11)
        table = profile.syscall_table(calls, coordinator_pid=50, processes=2, ops=2)
        self.assertEqual(table["echo client"], {"recvfrom": 0.5, "sendto": 1.0})
        self.assertEqual(table["echo server"], {"recvfrom": 0.5, "write": 0.5})
        self.assertEqual(table["tollgate client"], {"epoll_wait": 1.0, "sendto": 0.5})
        self.assertEqual(table["tollgate coordinator"], {"recvfrom": 0.5, "sendto": 0.5})


if __name__ == "__main__":
    unittest.main()
