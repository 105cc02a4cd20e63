# The API (and migrations): FastAPI, SQLAlchemy, Celery as a task sender. No GPU, no judge.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    KERNELGRADE_HOST=0.0.0.0 KERNELGRADE_DISPATCH=celery KERNELGRADE_LOCAL_JUDGES=0 \
    KERNELGRADE_DATA_DIR=/var/lib/kernelgrade

RUN useradd --create-home --uid 10001 kernelgrade \
    && mkdir -p /var/lib/kernelgrade && chown kernelgrade /var/lib/kernelgrade

WORKDIR /opt/kernelgrade
COPY pyproject.toml README.md ./
COPY src ./src
# The API imports no torch, but the built-in problems are loaded (with torch) to be upserted at start:
# the CPU wheel keeps the image small. The project itself is a path, not a registry name; its
# dependency ranges are pyproject.toml's.
# hadolint ignore=DL3013
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.5.1 \
    && pip install ".[service,scaleout]"

USER 10001
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/v1/health', timeout=4)"]
CMD ["kernelgrade", "serve"]
