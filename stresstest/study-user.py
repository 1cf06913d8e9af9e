"""The study's load exactly as a new user would write it: plain HttpUser, 0-1 s waits, /hello and
/secret in a 1:2 ratio, and ONE access token shared by every user (SG_STUDY_TOKEN). Run by
`npm run stress:default-stack` against the default `npm start` stack (its rate limits included).
"""
import os

from locust import HttpUser, between, task

TOKEN = os.environ.get("SG_STUDY_TOKEN", "")
if not TOKEN:
    raise SystemExit("SG_STUDY_TOKEN must hold the one access token every user sends")


class StudyUser(HttpUser):
    wait_time = between(0, 1)

    @task(1)
    def hello(self):
        self.client.get("/hello")

    @task(2)
    def secret(self):
        self.client.get("/secret", headers={"Authorization": "Bearer " + TOKEN})
