"""`kernelgrade worker` whose process dies (SIGKILL, as the OOM killer or a driver fault would) when it
starts grading a source carrying CRASH_MARK: a kernel that kills its worker every time, made reliable.

A real submission cannot be relied on to do it: the sandbox hides the judge from the run child (own pid
namespace), which is the point of the sandbox. Everything else is the real worker.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

CRASH_MARK = "KILL-MY-WORKER"


def main() -> int:
    from kernelgrade.cli import main as cli_main
    from kernelgrade.worker import grader

    real_evaluate = grader.evaluate

    def evaluate(request: Any, *args: Any, **kwargs: Any) -> Any:
        if CRASH_MARK in request.submission:
            os.kill(os.getpid(), signal.SIGKILL)
        return real_evaluate(request, *args, **kwargs)

    grader.evaluate = evaluate
    return cli_main(["worker", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
