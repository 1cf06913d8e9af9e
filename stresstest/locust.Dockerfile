# The load generator of docker-compose-stress.yaml: Debian's locust (python3-locust 2.12), the one
# the process runner uses, on the base image test/containers/setup.sh can make.
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-locust \
 && rm -rf /var/lib/apt/lists/*
ENTRYPOINT ["/usr/bin/python3", "-m", "locust"]
