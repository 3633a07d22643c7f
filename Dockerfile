# Images of the two Reveal binaries, from one build stage:
#   docker build --target exporter -t reveal-exporter .
#   docker build --target analyzer -t reveal-analyzer .
# docker-compose.yml builds both.

FROM rust:1-slim-bookworm AS build
WORKDIR /src
# The git commit for `*_build_info` and `--version` (.git is not copied in):
#   docker build --build-arg REVEAL_REVISION=$(git rev-parse --short=12 HEAD) ...
# Without it the revision is "unknown".
ARG REVEAL_REVISION=
COPY . .
RUN cargo build --release --locked -p reveal-exporter -p reveal-analyzer \
 && mkdir -p /out \
 && cp target/release/reveal-exporter target/release/reveal-analyzer /out/

FROM debian:bookworm-slim AS exporter
COPY --from=build /out/reveal-exporter /usr/local/bin/reveal-exporter
# Root inside the container, with only the capabilities docker-compose.yml adds
# (docs/privileges.md): the host's RAPL energy files and MSR devices are root-only.
EXPOSE 19190
ENTRYPOINT ["/usr/local/bin/reveal-exporter"]
CMD ["--path.procfs=/host/proc", "--path.sysfs=/host/sys", "--path.devfs=/host/dev"]

FROM debian:bookworm-slim AS analyzer
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/reveal-analyzer /usr/local/bin/reveal-analyzer
# The checkpoint directory; a named volume mounted here starts with this ownership.
RUN mkdir -p /var/lib/reveal-analyzer && chown nobody:nogroup /var/lib/reveal-analyzer
# The analyzer needs no privileges: it talks HTTP to Prometheus and Alertmanager.
USER nobody
WORKDIR /var/lib/reveal-analyzer
EXPOSE 19191
ENTRYPOINT ["/usr/local/bin/reveal-analyzer"]
