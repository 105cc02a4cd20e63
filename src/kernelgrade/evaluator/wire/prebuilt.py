"""Extensions built by the compile child, loaded by the run child without running the build again.

The compile child records, for every load_inline call that built, a digest of the call's arguments and
where the library landed under TORCH_EXTENSIONS_DIR. The run child, given that list, answers the same call
(same digest) by importing the library directly: no ninja run, no dependence on the build directory's path,
so the build can be copied into a run child that was started before the submission was known. A call with
other arguments (a submission that builds something different at run time) goes to the real load_inline.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Prebuilt:
    digest: str
    library: str  # relative to TORCH_EXTENSIONS_DIR
    python_module: bool = True

    def __post_init__(self) -> None:
        # The library is read from the compile child's reply and copied into the run child's dir: a path that
        # leaves the build dir would copy another job's build, or any file the judge can read.
        if not self.digest or not self.library or os.path.isabs(self.library) or ".." in Path(self.library).parts:
            raise ValueError(f"a prebuilt library must lie inside the build dir, not at {self.library!r}")


def call_digest(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The same for the same load_inline call in any process: its arguments are strings, lists and flags."""
    material = json.dumps({"args": list(args), "kwargs": kwargs}, sort_keys=True, default=repr)
    return hashlib.sha256(material.encode()).hexdigest()


def library_of(result: Any, extensions_dir: Path) -> tuple[str, bool] | None:
    """Where a successful build's library lies, relative to the extensions dir, and whether it was imported
    as a Python module (load_inline returns the module) or only loaded for its operators (it returns the
    path)."""
    path, python_module = (getattr(result, "__file__", None), True) if not isinstance(result, str) else (result, False)
    if not path:
        return None
    try:
        return str(Path(path).resolve().relative_to(extensions_dir.resolve())), python_module
    except ValueError:
        return None


def importing(prebuilt: Iterable[Prebuilt], libraries: Path, build: Callable[..., Any]) -> Callable[..., Any]:
    """load_inline as the run child uses it: a recorded call imports its library (found under `libraries`,
    at its place relative to the compile child's extensions dir), any other call builds."""
    known = {p.digest: p for p in prebuilt}

    def load_inline(*args: Any, **kwargs: Any) -> Any:
        found = known.get(call_digest(args, kwargs))
        library = libraries / found.library if found else None
        if found is None or library is None or not library.is_file():
            return build(*args, **kwargs)
        from torch.utils import cpp_extension

        module_name = library.name.split(".")[0]
        load_library: Callable[..., Any] = cpp_extension._import_module_from_library
        return load_library(module_name, str(library.parent), found.python_module)

    return load_inline
