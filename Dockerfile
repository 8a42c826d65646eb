# syntax=docker/dockerfile:1
# TaskCrawler image: `taskcrawler api` by default; the same image runs `taskcrawler worker` and
# `taskcrawler migrate` (see docker-compose.yml and docs/how-to/production.md).

# --- builder: wheels of the package and every dependency ---------------------------------------
FROM python:3.11-slim AS builder
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY taskcrawler ./taskcrawler
RUN pip wheel --wheel-dir /wheels .

# --- runtime: the wheels installed, no build tools, not root ------------------------------------
FROM python:3.11-slim AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TASKCRAWLER_LOG_FORMAT=json \
    TASKCRAWLER_AUTH_REQUIRED=true \
    TASKCRAWLER_WORKER_METRICS_HOST=0.0.0.0
# chromium renders pages (`render` on jobs, screenshots); tini is PID 1 and reaps what a killed
# browser leaves behind; fonts so rendered text and screenshots have glyphs.
RUN apt-get update \
    && apt-get install -y --no-install-recommends chromium webext-ublock-origin-chromium fonts-liberation tini \
    && rm -rf /var/lib/apt/lists/*
COPY --from=builder /wheels /wheels
RUN pip install --no-index --find-links=/wheels taskcrawler \
    && rm -rf /wheels \
    && useradd --system --uid 10001 --user-group --create-home --home-dir /app taskcrawler
USER taskcrawler
WORKDIR /app
# 8000: the API; 9100: a worker's /metrics and /healthz
EXPOSE 8000 9100
# python's urllib, not curl: the slim image has no curl. A worker overrides it (docker-compose.yml).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('TASKCRAWLER_PORT', '8000'), timeout=4)"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["taskcrawler", "api", "--host", "0.0.0.0"]
