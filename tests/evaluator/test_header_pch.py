"""The precompiled torch/extension.h: which load_inline calls may use it, and, with real builds in the real
sandbox, that a build with it gives a working extension, g++ really uses it (and ignores it for other flags),
a call with other flags builds without it, and the compile child cannot write it."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kernelgrade.evaluator import EvalRequest, Verdict, evaluate, precompile
from kernelgrade.evaluator.child.header_pch import call_variant, with_pch
from kernelgrade.evaluator.host import header_pch
from kernelgrade.evaluator.sandbox.levels import make_launcher
from kernelgrade.evaluator.wire.pch_variants import variant_flags
from kernelgrade.problems import find_builtin
from tests.conftest import RequestFactory

CASE = Path(__file__).parents[1] / "cases" / "cpu_correct" / "submission.py"
ANCHOR = "#include <torch/extension.h>\n"
CALL_END = "verbose=False)"


def test_only_calls_with_known_flags_and_nothing_else_get_a_variant() -> None:
    assert call_variant({"cpp_sources": "x"}) == "cpu-plain"
    assert call_variant({"cpp_sources": "x", "cuda_sources": "y", "extra_cflags": ["-O3 "]}) == "cuda-O3"
    assert call_variant({"cpp_sources": "x", "with_cuda": True, "extra_cflags": ["-O2"]}) == "cuda-O2"
    assert call_variant({"cpp_sources": "x", "cuda_sources": "y", "extra_cflags": [""]}) == "cuda-plain"
    for refused in ({"extra_cflags": ["-O3", "-ffast-math"]}, {"extra_cflags": ["-O1"]},
                    {"extra_cflags": "-O3"}, {"extra_include_paths": ["/x"]}, {"no_implicit_headers": True},
                    {"use_pch": True}):
        assert call_variant({"cpp_sources": "x", **refused}) is None, refused
    assert variant_flags("cuda-O3") == (True, ("-O3",))
    assert variant_flags("cpu-O1") is None and variant_flags("gpu-plain") is None


def _load_inline(name: str, cpp_sources: Any, cuda_sources: Any = None, extra_cflags: Any = None,
                 extra_include_paths: Any = None, verbose: bool = False) -> dict[str, Any]:
    """load_inline's shape, returning what it was given."""
    return {"name": name, "extra_cflags": extra_cflags, "cpp_sources": cpp_sources}


def test_a_ready_variant_gets_the_include_dir_and_a_missing_one_is_reported() -> None:
    missed: list[str] = []
    wrapped = with_pch(_load_inline, {"cpu-O3": "/pch/k"}, missed.append)
    assert wrapped("m", "src", extra_cflags=["-O3"])["extra_cflags"] == ["-O3", "-I/pch/k"]
    assert wrapped("m", "src")["extra_cflags"] is None and missed == ["cpu-plain"]
    assert wrapped("m", "src", None, ["-O1"])["extra_cflags"] == ["-O1"] and missed == ["cpu-plain"]


def _variant(index: int, call_end: str = CALL_END, prelude: str = "") -> str:
    source = CASE.read_text().replace(ANCHOR, f"{ANCHOR}// pch test {index}\n").replace(CALL_END, call_end)
    return prelude + source


@pytest.fixture(scope="module")
def pch_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compile cache whose cpu-plain PCH the judge has built (about 40 s on 2 cores, once for the module)."""
    cache = tmp_path_factory.mktemp("pch-cache")
    if not header_pch.build(cache, "cpu-plain"):
        pytest.skip("no PCH can be built here (needs GCC)")
    return cache


def _build_file(request: EvalRequest) -> str:
    outcome = precompile(request, make_launcher("auto"))
    assert outcome.failure is None, outcome.failure
    return next(outcome.extensions_dir.glob("*/build.ninja")).read_text()


def _ninja_value(build_file: str, name: str) -> list[str]:
    line = next(line for line in build_file.splitlines() if line.startswith(f"{name} ="))
    return shlex.split(line.partition("=")[2])


@pytest.mark.slow
def test_a_build_with_the_pch_is_correct_and_gcc_really_uses_it(pch_cache: Path,
                                                                make_request: RequestFactory) -> None:
    problem = find_builtin("add_relu")
    assert problem is not None
    request = make_request(problem.spec(), _variant(1), cache_dir=pch_cache, precompiled_header=True)
    build_file = _build_file(request)
    pch_dir = header_pch.ready_dirs(pch_cache)["cpu-plain"]
    flags = _ninja_value(build_file, "cflags")
    assert f"-I{pch_dir}" in flags
    assert evaluate(request, make_launcher("auto")).verdict is Verdict.CORRECT
    main_cpp = next(Path(request.cache_dir).glob("builds/*/ext/*/main.cpp"))
    gch = f"{pch_dir}/torch/extension.h.gch"
    used = subprocess.run(["c++", *flags, "-Winvalid-pch", "-H", "-fsyntax-only", str(main_cpp)],
                          capture_output=True, text=True, check=True)
    assert f"! {gch}" in used.stderr  # `!`: a valid PCH, read instead of the header
    other = subprocess.run(["c++", *flags, "-O1", "-Winvalid-pch", "-H", "-fsyntax-only", str(main_cpp)],
                           capture_output=True, text=True, check=True)  # still compiles: GCC parses the header
    assert f"x {gch}" in other.stderr and "not used because" in other.stderr


@pytest.mark.slow
def test_a_call_with_other_flags_builds_without_the_pch(pch_cache: Path, make_request: RequestFactory) -> None:
    problem = find_builtin("add_relu")
    assert problem is not None
    source = _variant(2, 'verbose=False, extra_cflags=["-O1", "-DKG_TEST=1"])')
    request = make_request(problem.spec(), source, cache_dir=pch_cache, precompiled_header=True)
    build_file = _build_file(request)
    assert not any(flag.startswith("-I") for flag in _ninja_value(build_file, "cflags"))
    assert evaluate(request, make_launcher("auto")).verdict is Verdict.CORRECT


# Runs at the submission's import in the compile child: tries to change every file of the PCH directory and to
# add one, and writes what it saw into its own build dir, the one place it may write.
PROBE = """import json as _json, os as _os, pathlib as _pathlib
_root = _pathlib.Path({root!r})
_seen = [str(p) for p in _root.rglob("*") if p.is_file()]
_written = []
for _path in [*_seen, str(_root / "planted"), str(_root / "torch" / "planted.h")]:
    try:
        with open(_path, "ab") as _handle:
            _handle.write(b"poison")
        _written.append(_path)
    except OSError:
        pass
_pathlib.Path(_os.environ["TORCH_EXTENSIONS_DIR"], "probe.json").write_text(_json.dumps({{"seen": _seen,
                                                                                       "written": _written}}))
"""


@pytest.mark.slow
def test_the_compile_child_sees_the_pch_but_cannot_write_it(pch_cache: Path, make_request: RequestFactory) -> None:
    launcher = make_launcher("auto")
    if launcher.level == "none":
        pytest.skip("no sandbox here")
    problem = find_builtin("add_relu")
    assert problem is not None
    pch_dir = Path(header_pch.ready_dirs(pch_cache)["cpu-plain"])
    gch = pch_dir / "torch" / "extension.h.gch"
    before = gch.stat()
    source = _variant(3, prelude=PROBE.format(root=str(header_pch.pch_root(pch_cache))))
    outcome = precompile(make_request(problem.spec(), source, cache_dir=pch_cache, precompiled_header=True),
                         launcher)
    assert outcome.failure is None
    probe = json.loads((outcome.extensions_dir / "probe.json").read_text())
    assert str(gch) in probe["seen"] and probe["written"] == []
    after = gch.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert not (header_pch.pch_root(pch_cache) / "planted").exists()
