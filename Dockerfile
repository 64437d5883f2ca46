# syntax=docker/dockerfile:1
# The verifleet image: one image for workers, Flower and the CLI.
#
#   docker build -t verifleet:0.1.0 .
#   docker run --rm verifleet:0.1.0 --help
#
# CMD defaults to a worker; pass another sub-command to run anything else, e.g.
#   docker run --rm -e VERIFLEET_REDIS_URL=... verifleet:0.1.0 jobs
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# CPU torch first and from the CPU index: the embedding extra's plain `torch`
# requirement would otherwise resolve to a multi-GB CUDA build. Its own layer, so
# code changes never re-download it.
ARG TORCH_VERSION=2.13.0
# bubblewrap and libseccomp: the sandbox that runs template and trait code
# (docs/security.md).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
RUN pip install "torch==${TORCH_VERSION}" --index-url https://download.pytorch.org/whl/cpu

WORKDIR /opt/verifleet
# Only what the build needs, dependencies before sources, so the dependency layer
# stays cached while the code changes.
COPY pyproject.toml setup.py README.md ./
COPY verifleet/ verifleet/
COPY schemas/ schemas/
COPY templates/ templates/
COPY pipeline/ pipeline/
COPY workers/ workers/
COPY orchestrator/ orchestrator/
COPY sandbox/ sandbox/
COPY store/ store/
COPY reward/ reward/
COPY results/ results/
COPY viewer/ viewer/
COPY limits/ limits/
COPY web/ web/
# EXTRAS="" builds a smaller image without the embedding check (no sentence-transformers).
ARG EXTRAS=embedding
RUN if [ -n "${EXTRAS}" ]; then pip install ".[${EXTRAS}]"; else pip install .; fi
# The example benchmarks, for the compose `submit` demo and a first smoke test.
COPY examples/ examples/

# Workers run model calls and user templates: never as root.
RUN useradd --create-home --uid 10001 --user-group verifleet
USER verifleet
WORKDIR /home/verifleet

# Celery shuts down warmly on SIGTERM: running units finish, queued ones stay in Redis.
STOPSIGNAL SIGTERM
ENTRYPOINT ["verifleet"]
CMD ["worker"]
