"""Loading the untrusted submission (in a child) and the trusted problem (in the judge) as modules."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

SUBMISSION_MODULE = "submission"


def import_submission(path: Path) -> types.ModuleType:
    """Execute the submission file as module `submission`, as KernelBench's harness does."""
    spec = importlib.util.spec_from_file_location(SUBMISSION_MODULE, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[SUBMISSION_MODULE] = module
    spec.loader.exec_module(module)
    return module


def load_problem_module(source: str, name: str) -> types.ModuleType:
    """Execute a trusted problem file; its `Model`, `get_inputs` and `get_init_inputs` are used."""
    module = types.ModuleType(f"kernelgrade_problem_{abs(hash(source)):x}")
    module.__file__ = f"<problem {name}>"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    for required in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, required):
            raise ValueError(f"problem {name!r} defines no {required}")
    return module
