# A GPU worker: CUDA toolkit (nvcc, for submitted extensions), torch, bubblewrap for the sandbox.
FROM pytorch/pytorch:2.5.1-cuda12.4-cudnn9-devel

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    KERNELGRADE_DISPATCH=celery KERNELGRADE_DATA_DIR=/var/lib/kernelgrade

# bubblewrap: the run and compile children's sandbox; ninja and g++: torch.utils.cpp_extension builds.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap=0.* ninja-build=1.* g++=4:* \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 10001 kernelgrade \
    && mkdir -p /var/lib/kernelgrade && chown kernelgrade /var/lib/kernelgrade

WORKDIR /opt/kernelgrade
COPY pyproject.toml README.md ./
COPY src ./src
# torch comes with the base image; installing the package must not replace it with another build.
# The project itself is a path, not a registry name; its dependency ranges are pyproject.toml's.
# hadolint ignore=DL3013
RUN pip install ".[service,scaleout]"

USER 10001
# Healthy while the worker's reaper loop runs and reaches the database: it touches worker.alive every
# lease/3 (20 s by default), so a file older than a minute means the worker is stuck or cut off.
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
    CMD ["sh", "-c", "find /var/lib/kernelgrade/worker.alive -mmin -1 | grep -q ."]
CMD ["kernelgrade", "worker"]
