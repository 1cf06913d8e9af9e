"""Mints the locust token pool from the dev IdP for docker-compose-stress.yaml (the local runner
does this in perf/tokens.ts), waits for the gate, then execs locust."""

import json
import os
import sys
import time
import urllib.parse
import urllib.request

ISSUER = os.environ["IDP_ISSUER"]
TARGET = os.environ["TARGET"]
USERS = int(os.environ.get("USERS", "2500"))
TOKENS = "/tmp/tokens.txt"


def wait_for(url):
    for _ in range(120):
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except Exception:
            time.sleep(1)
    sys.exit(f"{url} never answered")


def mint(count):
    body = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": "spa-demo", "scope": "secrets:read"}
    ).encode()
    tokens = set()
    while len(tokens) < count:
        with urllib.request.urlopen(f"{ISSUER}/token", data=body, timeout=10) as reply:
            tokens.add(json.load(reply)["access_token"])
    return tokens


wait_for(f"{ISSUER}/readyz")
wait_for(f"{TARGET}/hello")
with open(TOKENS, "w", encoding="ascii") as handle:
    handle.write("\n".join(mint(USERS)) + "\n")
os.environ["SG_STRESS_TOKENS"] = TOKENS
os.execvp("locust", ["locust", *sys.argv[1:]])
