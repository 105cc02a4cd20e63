"""bench/problem_table.py on the CPU path: it runs as the GPU host will run it and imports no service code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SERVICE_PACKAGES = ("fastapi", "sqlalchemy", "pydantic", "alembic", "uvicorn", "httpx", "kernelgrade.service",
                    "kernelgrade.storage")

# Runs the script as __main__ and then lists what it imported.
RUNNER = """
import json, runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as exit:
    code = exit.code
print("MODULES=" + json.dumps(sorted(sys.modules)))
sys.exit(code)
"""


def run_table(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-c", RUNNER, str(ROOT / "bench" / "problem_table.py"), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_cpu_table_runs_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "table.json"
    done = run_table("--device", "cpu", "softmax_small", "matmul_small", "--max-device-ms", "50",
                     "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "softmax_small" in done.stdout and "matmul_small" in done.stdout
    table = json.loads(out.read_text())
    rows = {row["problem"]: row for row in table["rows"]}
    assert sorted(rows) == ["matmul_small", "softmax_small"]
    matmul = rows["matmul_small"]
    assert matmul["median_ms"] > 0 and matmul["reps"] >= 2
    assert matmul["tflops"] * 1e12 * matmul["median_ms"] / 1e3 == pytest.approx(2 * 512**3)
    assert table["timing"]["max_device_ms"] == 50
    assert table["environment"]["device_kind"] == "cpu"
    modules = json.loads(done.stdout.split("MODULES=", 1)[1])
    assert not [m for m in modules if m.startswith(SERVICE_PACKAGES)]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the behaviour without a GPU")
def test_cuda_table_without_a_gpu_says_so() -> None:
    done = run_table("--device", "cuda")
    assert done.returncode == 2
    assert "no CUDA device" in done.stderr


def test_cpu_table_times_torch_compile_of_the_reference_too(tmp_path: Path) -> None:
    out = tmp_path / "table.json"
    done = run_table("--device", "cpu", "add_relu", "--max-device-ms", "50", "--compiled", "--out", str(out))
    assert done.returncode == 0, done.stderr
    row = json.loads(out.read_text())["rows"][0]
    assert row["compiled_status"] == "measured", row
    assert row["compiled_ms"] > 0 and row["compile_s"] > 0
    assert "eager/compiled" in done.stdout
