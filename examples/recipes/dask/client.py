"""The Dask recipe's job: client.py SCHEDULER_URL WORKER_URLS (comma-separated).

Connects to the scheduler berth learned, checks that the workers it knows are exactly
the ones berth learned, and runs a task on each of them.
"""
import sys

from distributed import Client

scheduler, workers = sys.argv[1], sorted(sys.argv[2].split(","))
with Client(scheduler, timeout=60) as c:
    c.wait_for_workers(len(workers), timeout=60)
    known = sorted(c.scheduler_info()["workers"])
    if known != workers:
        sys.exit(f"the scheduler knows workers {known}, berth learned {workers}")
    for w in workers:
        got = c.submit(lambda x: x * 2, 21, workers=[w], pure=False).result(timeout=60)
        print(f"worker {w}: {got}", flush=True)
print(f"dask: {len(workers)} workers reached through {scheduler}")
