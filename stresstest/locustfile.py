"""The study's stress scenario against one gate: /hello (weight 1) and /secret (weight 2), each
simulated user waiting 0-1 s between requests and holding its own access token (the study:
docs/study.md).

Run by `npm run stress`, which passes the gate's URL as --host and the token pool (one token a
line, minted by the dev IdP) in SG_STRESS_TOKENS. Works with Debian's python3-locust 2.12.
"""

import itertools
import os
import sys
import time

import locust.runners
import locust.stats
from locust import FastHttpUser, between, task

# Debian's package reports an empty version, and distributed mode refuses workers whose version
# differs from the master's; give both sides the packaged one.
if not locust.runners.__version__:
    locust.runners.__version__ = "2.12.1"

# Locust 2.12 appends a history row every second but flushes only every 10 s, which leaves the
# progress line and the over-time chart blind; flush every row.
locust.stats.CSV_STATS_FLUSH_INTERVAL_SEC = 0


class FinalStatsCSVFileWriter(locust.stats.StatsCSVFileWriter):
    """Locust 2.12 never rewrites its CSV files once the run has ended, so _stats.csv keeps the
    counts of the last periodic write (up to a second short). Write them once more on quitting,
    when every user has stopped and the numbers are final."""

    def __init__(self, environment, *args, **kwargs):
        super().__init__(environment, *args, **kwargs)
        environment.events.quitting.add_listener(self.write_final)

    def write_final(self, **_kwargs):
        requests = self.requests_csv_filehandle
        requests.seek(0)
        requests.truncate()
        self.requests_csv_writer.writerow(self.requests_csv_columns)
        self._requests_data_rows(self.requests_csv_writer)
        self._stats_history_data_rows(self.stats_history_csv_writer, time.time())
        self.failures_csv_filehandle.seek(self.failures_csv_data_start)
        self._failures_data_rows(self.failures_csv_writer)
        self.failures_csv_filehandle.truncate()
        for handle in (requests, self.stats_history_csv_filehandle, self.failures_csv_filehandle):
            handle.flush()


# locust.main looks the writer class up when it builds it, after this file is loaded.
if "locust.main" in sys.modules:
    sys.modules["locust.main"].StatsCSVFileWriter = FinalStatsCSVFileWriter


def load_tokens():
    path = os.environ.get("SG_STRESS_TOKENS")
    if not path:
        raise SystemExit("SG_STRESS_TOKENS must name a file with one access token a line")
    with open(path, encoding="ascii") as handle:
        tokens = [line.strip() for line in handle if line.strip()]
    if not tokens:
        raise SystemExit(f"no tokens in {path}")
    return tokens


TOKENS = load_tokens()
# Users take tokens in turn, so with a pool as large as the user count no two users share one.
NEXT_TOKEN = itertools.count()


class GateUser(FastHttpUser):
    wait_time = between(0, 1)

    def on_start(self):
        token = TOKENS[next(NEXT_TOKEN) % len(TOKENS)]
        self.auth = {"Authorization": f"Bearer {token}"}

    @task(1)
    def hello(self):
        self.client.get("/hello")

    @task(2)
    def secret(self):
        self.client.get("/secret", headers=self.auth)
