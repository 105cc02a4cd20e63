"""The environment a child starts with: an allowlist of the judge's, never its secrets."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

import kernelgrade

# What compilers, CUDA and Python need; everything else (API keys, database URLs, the seed secret) stays out.
ALLOWED = (
    "PATH", "LANG", "LC_ALL", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_HOME", "LD_LIBRARY_PATH",
    "CC", "CXX", "OMP_NUM_THREADS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "TORCH_CUDA_ARCH_LIST",
)


def package_root() -> Path:
    """The directory holding the `kernelgrade` package, for the child's PYTHONPATH."""
    return Path(kernelgrade.__file__).resolve().parent.parent


def child_env(work_dir: Path, extensions_dir: Path, extra: Mapping[str, str],
              parent: Mapping[str, str] | None = None) -> dict[str, str]:
    source = os.environ if parent is None else parent
    env = {k: source[k] for k in ALLOWED if k in source}
    env.update({
        "PYTHONPATH": str(package_root()),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": str(work_dir),
        "TMPDIR": str(work_dir),
        "TORCH_EXTENSIONS_DIR": str(extensions_dir),
    })
    env.update(extra)
    return env


def python_argv(module: str) -> tuple[str, ...]:
    # -s: no user site-packages; -I would also drop PYTHONPATH, which the child needs.
    return (sys.executable, "-s", "-m", module)
