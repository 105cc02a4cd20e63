"""Real HTTP servers for service tests: the app in a uvicorn thread (API tests), or `kernelgrade serve` as
a child process (end-to-end tests, where the process can be killed)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI

# Starting `kernelgrade serve` imports torch and applies migrations: a few seconds, far more on a loaded
# 2-core CI machine.
SERVER_START_S = 90.0
# A graceful stop gives back running jobs and closes the database; seconds at most.
SERVER_STOP_S = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


class ThreadServer:
    """The app served by uvicorn in a thread of the test process, on a free port."""

    def __init__(self, app: FastAPI) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        wait_until(lambda: self.server.started, 30.0, "the uvicorn thread to start", 0.05)
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(SERVER_STOP_S)


# No precompiled header unless a test asks, for every service or worker the tests start: each fresh cache would
# build its own as the pool starts (0.8 GB, and 20-30 s of one of the machine's two cores, holding the host lock
# shared so that every CPU measurement waits for it).
NO_PCH_NAME, NO_PCH_VALUE = "KERNELGRADE_PRECOMPILED_HEADERS", "0"
NO_PCH = f"{NO_PCH_NAME}={NO_PCH_VALUE}"


class ServeProcess:
    """`kernelgrade serve` in a child process with settings from KERNELGRADE_* variables."""

    def __init__(self, data_dir: Path, settings: Mapping[str, str]) -> None:
        self.port = free_port()
        self.data_dir = data_dir
        self.log_path = data_dir / f"serve-{self.port}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELGRADE_")}
        env.update({"KERNELGRADE_DATA_DIR": str(data_dir), "KERNELGRADE_HOST": "127.0.0.1",
                    "KERNELGRADE_PORT": str(self.port), NO_PCH_NAME: NO_PCH_VALUE, **settings})
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServeProcess:
        command = [str(Path(sys.executable).parent / "kernelgrade"), "serve"]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        wait_until(self._ready, SERVER_START_S, f"kernelgrade serve on port {self.port}\n{self.log()}", 0.25)
        return self

    def _ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"kernelgrade serve exited with {self.process.returncode}:\n{self.log()}")
        try:
            health = httpx.get(self.url + "/v1/health", timeout=2.0)
        except httpx.HTTPError:
            return False
        # An API-only server (KERNELGRADE_LOCAL_JUDGES=0) is ready without a judge of its own.
        needs_judge = self.env.get("KERNELGRADE_LOCAL_JUDGES") != "0"
        return health.status_code == 200 and (health.json()["workers_online"] >= 1 or not needs_judge)

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up, as in a crash or an OOM kill."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(SERVER_STOP_S)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(SERVER_STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(SERVER_STOP_S)

    def log(self) -> str:
        """The log's end, for failure messages."""
        return self.whole_log()[-6000:]

    def whole_log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
