"""One pyrate-limiter worker for `tollgate bench admission --processes P --peer pyrate`.

Performs N acquisitions on one key of a SQLite bucket shared (through its file lock) with
the other workers, starting at a common wall-clock instant, and prints one JSON report
in the shape tollgate's own bench workers use.
"""
import json
import sys
import time

from pyrate_limiter import Duration, Limiter, Rate, SQLiteBucket


def main() -> None:
    db_path, n, rate, start_at_us = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    if rate <= 0:
        rates = [Rate(10**9, Duration.SECOND)]  # "unlimited", as tollgate's bench policy
    elif rate >= 1:
        rates = [Rate(int(rate), Duration.SECOND)]
    else:
        rates = [Rate(1, int(1000 / rate))]
    bucket = SQLiteBucket.init_from_file(rates, db_path=db_path, use_file_lock=True)
    limiter = Limiter(bucket)
    delay = start_at_us / 1e6 - time.time()
    if delay > 0:
        time.sleep(delay)
    latencies = []
    grants = []
    started_us = time.time_ns() // 1000
    for _ in range(n):
        t = time.perf_counter_ns()
        limiter.try_acquire("bench", blocking=True)
        latencies.append((time.perf_counter_ns() - t) // 1000)
        grants.append(time.time_ns() // 1000)
    finished_us = time.time_ns() // 1000
    print(json.dumps({"latencies_us": latencies, "started_us": started_us, "finished_us": finished_us, "granted_at_us": grants}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
