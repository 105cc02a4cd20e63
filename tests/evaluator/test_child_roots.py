"""What a sandboxed child's view of the host is built from (child_roots.py): the paths it uses, nothing else."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from kernelgrade.evaluator.sandbox import child_roots as roots_module
from kernelgrade.evaluator.sandbox.child_env import child_env, package_root
from kernelgrade.evaluator.sandbox.child_roots import child_roots, describe_roots, outermost, under_any


def _roots(tmp_path: Path, gpu: bool = False, **extra: str) -> list[Path]:
    env = {**child_env(tmp_path, tmp_path, {}), **extra}
    return list(child_roots(env, [package_root()], gpu=gpu).paths)


def test_the_view_holds_the_interpreter_torch_and_the_package(tmp_path: Path) -> None:
    import torch

    paths = _roots(tmp_path)
    needed = [Path(os.path.realpath(p)) for p in (sys.prefix, sys.base_prefix, Path(sys.executable).resolve().parent,
                                                  Path(torch.__file__).parent, package_root())]
    assert all(under_any(p, paths) for p in needed), describe_roots(child_roots(child_env(tmp_path, tmp_path, {})))
    assert Path("/etc/ld.so.cache") in paths or not Path("/etc/ld.so.cache").exists()


def test_the_view_leaves_out_the_host_s_secrets_and_services(tmp_path: Path) -> None:
    paths = _roots(tmp_path)
    assert Path("/") not in paths and Path("/etc") not in paths
    for private in ("/etc/passwd", "/etc/shadow", "/etc/hostname", "/etc/ssh", "/var", "/run", "/srv", "/home",
                    "/tmp", str(tmp_path)):
        assert not under_any(Path(private), paths), f"{private} is in the child's view"
    assert not under_any(Path.home(), paths) or Path.home() == Path("/"), "the judge's whole home is in the view"


def test_merged_usr_links_are_recreated_not_bound(tmp_path: Path) -> None:
    roots = child_roots(child_env(tmp_path, tmp_path, {}))
    for name in ("/bin", "/lib", "/sbin", "/lib64"):
        if os.path.islink(name):
            assert (os.readlink(name), Path(name)) in roots.links
            assert Path(name) not in roots.paths


def test_build_tools_on_path_bring_their_directories(tmp_path: Path) -> None:
    toolkit = tmp_path / "opt" / "cuda-99"
    (toolkit / "bin").mkdir(parents=True)
    nvcc = toolkit / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\n")
    nvcc.chmod(0o755)
    paths = _roots(tmp_path, PATH=f"{toolkit / 'bin'}:/usr/bin")
    assert toolkit in paths, "nvcc's toolkit (include/, lib64/ beside bin/) is missing from the view"
    assert Path("/opt") not in paths


def test_a_compiler_named_by_cc_brings_its_installation(tmp_path: Path) -> None:
    # As on the GPU host: CC=/opt/gcc/bin/gcc, whose stddef.h lives under /opt/gcc/lib/gcc/...
    prefix = tmp_path / "opt" / "gcc"
    (prefix / "bin").mkdir(parents=True)
    gcc = prefix / "bin" / "gcc"
    gcc.write_text("#!/bin/sh\n")
    gcc.chmod(0o755)
    paths = _roots(tmp_path, PATH="/usr/bin", CC=str(gcc))
    assert prefix in paths, "the compiler's own headers (lib/gcc/.../include) are missing from the view"


def test_a_gpu_child_gets_the_driver_libraries_and_sys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    driver = tmp_path / "nvidia" / "lib64"
    driver.mkdir(parents=True)
    (driver / "libcuda.so.1").write_text("")
    plain = tmp_path / "other" / "lib"
    plain.mkdir(parents=True)
    monkeypatch.setattr(roots_module, "_linker_dirs", lambda: (driver, plain))
    gpu_paths, cpu_paths = _roots(tmp_path / "w", gpu=True), _roots(tmp_path / "w")
    assert driver in gpu_paths and plain not in gpu_paths and Path("/sys") in gpu_paths
    assert driver not in cpu_paths and Path("/sys") not in cpu_paths


def test_linker_configuration_is_read_with_its_includes(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "cuda.conf").write_text("/usr/local/cuda/lib64  # toolkit\n")
    conf = tmp_path / "ld.so.conf"
    conf.write_text(f"include {tmp_path}/conf.d/*.conf\n/usr/local/lib\n")
    assert roots_module._conf_dirs(conf, 0) == [Path("/usr/local/cuda/lib64"), Path("/usr/local/lib")]


def test_outermost_keeps_only_the_top_paths() -> None:
    assert outermost([Path("/a/b"), Path("/a"), Path("/c/d"), Path("/c/de")]) == [Path("/a"), Path("/c/d"),
                                                                                  Path("/c/de")]


def test_a_linked_entry_is_bound_at_its_target_and_linked_back(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    zone = tmp_path / "usr-share" / "zoneinfo" / "UTC"
    zone.parent.mkdir(parents=True)
    zone.write_text("TZif")
    link = tmp_path / "etc" / "localtime"
    link.parent.mkdir()
    link.symlink_to(zone)
    monkeypatch.setattr(roots_module, "etc_entries", lambda: [link])
    roots = child_roots(child_env(tmp_path, tmp_path, {}))
    assert zone in roots.paths and link not in roots.paths
    assert (str(zone), link) in roots.links
