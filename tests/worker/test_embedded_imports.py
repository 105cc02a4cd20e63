"""`kernelgrade serve` with its embedded judges needs the `service` extra only: Celery, kombu and redis are
the `scaleout` extra, which a fresh machine following the README's embedded default does not have."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Each of these, set to None in sys.modules, makes `import name` raise ImportError as if it were not installed.
SCALEOUT_MODULES = ("celery", "kombu", "redis")

APP_WITHOUT_SCALEOUT = """
import sys
for name in {modules!r}:
    sys.modules[name] = None
from kernelgrade.config import Settings
from kernelgrade.serve import dispatch_for, prepare_database
settings = Settings.from_env({{}}, data_dir={data_dir!r})
print(type(dispatch_for(settings, prepare_database(settings))).__name__)
"""


def test_the_embedded_service_builds_without_the_scaleout_extra(tmp_path: Path) -> None:
    code = APP_WITHOUT_SCALEOUT.format(modules=SCALEOUT_MODULES, data_dir=str(tmp_path / "data"))
    ran = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip().endswith("LocalDispatch")
