"""The minted-values profile (`npm run stress:minted`): each simulated user holds its own access
token (its own `sub`) and fetches /secret once every SG_MINTED_PERIOD seconds (default 30), as an
SPA that refreshes its set. A fetch counts as a failure unless it is a 200 JSON object carrying
every minted value named in SG_MINTED_NAMES with its `expires_at`, and `Cache-Control: no-store`.

Tokens: one a line in the file SG_STRESS_TOKENS names (stresstest/minted.ts mints them from the
dev IdP). Runs with Debian's python3-locust 2.12 (/usr/bin/python3).
"""

import itertools
import json
import os

import locust.runners
from locust import FastHttpUser, constant_pacing, task

# Debian's package reports an empty version (see locustfile.py).
if not locust.runners.__version__:
    locust.runners.__version__ = "2.12.1"


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
NEXT_TOKEN = itertools.count()
PERIOD = float(os.environ.get("SG_MINTED_PERIOD", "30"))
NAMES = [name for name in os.environ.get("SG_MINTED_NAMES", "").split(",") if name]


def problem_of(response):
    """Why an answer is not a set with its minted values, or None when it is one."""
    if response.status_code != 200:
        return f"status {response.status_code}"
    if response.headers.get("cache-control") != "no-store":
        return "no Cache-Control: no-store"
    try:
        body = json.loads(response.text)
    except ValueError:
        return "not JSON"
    expires = body.get("expires_at") if isinstance(body, dict) else None
    if not isinstance(expires, dict):
        return "no expires_at"
    for name in NAMES:
        if not isinstance(body.get(name), str) or not isinstance(expires.get(name), int):
            return f"no minted {name}"
    return None


class MintedSetUser(FastHttpUser):
    # One fetch every PERIOD seconds, however long the answer took.
    wait_time = constant_pacing(PERIOD)

    def on_start(self):
        # Users take tokens in turn: with a pool as large as the user count, one token each.
        token = TOKENS[next(NEXT_TOKEN) % len(TOKENS)]
        self.auth = {"Authorization": f"Bearer {token}"}

    @task
    def fetch_set(self):
        with self.client.get("/secret", headers=self.auth, catch_response=True) as response:
            problem = problem_of(response)
            if problem is None:
                response.success()
            else:
                response.failure(problem)
