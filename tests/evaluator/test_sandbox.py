"""The sandboxing launchers themselves: what a child can and cannot do under each, and how a level is
chosen. Each test starts real sandboxed children; a level this machine lacks is skipped with the reason
(CI installs bubblewrap, so the bwrap tests run there)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kernelgrade.evaluator.sandbox import bwrap as bwrap_module
from kernelgrade.evaluator.sandbox import gpu_nodes, isolation
from kernelgrade.evaluator.sandbox.child_env import child_env, package_root
from kernelgrade.evaluator.sandbox.child_process import ChildGone, ChildProcess
from kernelgrade.evaluator.sandbox.gpu_nodes import GpuAccess, GpuNodesError
from kernelgrade.evaluator.sandbox.isolation import UID_BASE, Identity, SandboxOptions
from kernelgrade.evaluator.sandbox.launcher import ChildSpec, Launcher, ResourceLimits
from kernelgrade.evaluator.sandbox.levels import SandboxUnavailable, UnsandboxedRefused, make_launcher, probe_level
from kernelgrade.evaluator.sandbox.unshare import UnshareLauncher
from kernelgrade.evaluator.wire.compile_protocol import CPU_LIMIT_STATUS
from kernelgrade.evaluator.wire.shared_region import SharedRegion

MiB = 1024**2
# A root judge's child cannot use an interpreter under a 0700 home without bwrap's covers; the unshare
# tests then run their snippets with the system Python (the helper before it still runs as the judge).
SYSTEM_PYTHON = "/usr/bin/python3"


@dataclass
class Sandbox:
    launcher: Launcher
    python: str


def _bwrap() -> Sandbox:
    reason = probe_level("bwrap")
    if reason:
        pytest.skip(f"bwrap is unavailable here: {reason}")
    return Sandbox(make_launcher("bwrap"), sys.executable)


def _unshare() -> Sandbox:
    if shutil.which("unshare") is None:
        pytest.skip("util-linux unshare is not installed")
    if not probe_level("unshare"):
        return Sandbox(make_launcher("unshare"), sys.executable)
    if not os.path.exists(SYSTEM_PYTHON):
        pytest.skip(f"unshare is unavailable here ({probe_level('unshare')}) and there is no {SYSTEM_PYTHON}")
    return Sandbox(UnshareLauncher(), SYSTEM_PYTHON)


@pytest.fixture
def bwrap() -> Sandbox:
    return _bwrap()


@pytest.fixture(params=["bwrap", "unshare"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    return _bwrap() if request.param == "bwrap" else _unshare()


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "job-own"
    path.mkdir(parents=True)
    return path


def start(box: Sandbox, work_dir: Path, code: str, **spec_fields: Any) -> ChildProcess:
    env = child_env(work_dir, work_dir, {})
    spec = ChildSpec((box.python, "-s", "-c", code), env, work_dir, readable=(package_root(),),
                     hidden=(work_dir.parent,), **spec_fields)
    return ChildProcess(box.launcher.popen(spec))


def run(box: Sandbox, work_dir: Path, code: str, timeout: float = 60.0, **spec_fields: Any) -> dict[str, Any]:
    """Run a snippet that prints one JSON object; return it."""
    child = start(box, work_dir, code, **spec_fields)
    try:
        return child.receive(timeout)
    except ChildGone:
        pytest.fail(f"the sandboxed snippet died: {child.log.text()[-2000:]}")
    finally:
        child.kill()


def snippet(body: str) -> str:
    """A child program: `body` fills the dict `out`, which is printed as the reply."""
    return "import json, os, socket, sys\nout = {}\n" + body + "\nprint(json.dumps(out), flush=True)\n"


def test_network_is_unreachable(sandbox: Sandbox, work_dir: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        out = run(sandbox, work_dir, snippet(f"""
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
    out["connected"] = True
except OSError as exc:
    out["connected"] = False
    out["error"] = type(exc).__name__
"""))
    assert out["connected"] is False, "a sandboxed child reached a server on the judge's loopback"


def test_host_unix_sockets_are_hidden(bwrap: Sandbox, work_dir: Path) -> None:
    if not os.access("/run", os.W_OK):
        pytest.skip("cannot create a test socket under /run here")
    path = Path(f"/run/kernelgrade-test-{uuid.uuid4().hex[:8]}.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        os.chmod(path, 0o777)  # what local services (Postgres) do with their sockets
        server.listen()
        try:
            out = run(bwrap, work_dir, snippet(f"""
s = socket.socket(socket.AF_UNIX)
try:
    s.connect({str(path)!r})
    out["connected"] = True
except OSError:
    out["connected"] = False
"""))
        finally:
            path.unlink()
    assert out["connected"] is False, "a unix socket of the host was reachable from the sandbox"


def test_root_filesystem_is_read_only_and_work_dir_writable(bwrap: Sandbox, work_dir: Path, tmp_path: Path) -> None:
    targets = [Path("/var/tmp") / f"kg-escape-{uuid.uuid4().hex[:8]}", tmp_path / "kg-escape",
               package_root() / "kg-escape", Path("/tmp") / f"kg-escape-{uuid.uuid4().hex[:8]}"]
    out = run(bwrap, work_dir, snippet(f"""
out["written"] = []
for target in {[str(t) for t in targets]!r}:
    try:
        with open(target, "w") as f:
            f.write("escaped")
        out["written"].append(target)
    except OSError:
        pass
with open("inside.txt", "w") as f:
    f.write("ok")
out["inside"] = True
"""))
    leaked = [t for t in targets if t.exists()]
    for target in leaked:
        target.unlink()
    assert not leaked and not out["written"], f"the child wrote outside its work dir: {out['written']}"
    assert (work_dir / "inside.txt").read_text() == "ok"


def test_work_dir_is_writable(sandbox: Sandbox, work_dir: Path) -> None:
    out = run(sandbox, work_dir, snippet("""
with open("made-inside.txt", "w") as f:
    f.write("hello")
out["cwd"] = os.getcwd()
"""))
    assert out["cwd"] == str(work_dir)
    assert (work_dir / "made-inside.txt").read_text() == "hello"


def test_environment_is_scrubbed(sandbox: Sandbox, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELGRADE_TEST_SECRET", "s3cr3t-value")
    # Another of the grader's processes with the secret in its initial environment (what /proc shows).
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], env=dict(os.environ))
    try:
        out = _secret_scan(sandbox, work_dir)
    finally:
        holder.kill()
        holder.wait()
    assert out == {"env": False, "proc": []}, f"the secret leaked into the sandbox: {out}"


def _secret_scan(sandbox: Sandbox, work_dir: Path) -> dict[str, Any]:
    return run(sandbox, work_dir, snippet("""
out["env"] = "KERNELGRADE_TEST_SECRET" in os.environ
out["proc"] = []
for pid in os.listdir("/proc"):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            if b"s3cr3t-value" in f.read():
                out["proc"].append(pid)
    except OSError:
        pass
"""))


def test_child_runs_unprivileged(sandbox: Sandbox, work_dir: Path) -> None:
    out = run(sandbox, work_dir, snippet("""
out["uid"] = os.getuid()
try:
    open("/etc/shadow", "rb").read(1)
    out["shadow"] = True
except OSError:
    out["shadow"] = False
"""))
    # A root judge's child has a real uid of its own; any other judge's is 65534 inside its user namespace.
    assert out["uid"] >= UID_BASE if os.geteuid() == 0 else out["uid"] == 65534
    assert out["shadow"] is False, "the child could read /etc/shadow"


def test_other_jobs_are_hidden(bwrap: Sandbox, work_dir: Path) -> None:
    sibling = work_dir.parent / "job-other"
    sibling.mkdir()
    (sibling / "marker.txt").write_text("another job's inputs")
    out = run(bwrap, work_dir, snippet("""
out["seen"] = sorted(os.listdir(".."))
"""))
    assert out["seen"] == ["job-own"]


@pytest.fixture
def shm_work_dir() -> Iterator[Path]:
    """A job's work dir on /dev/shm (KERNELGRADE_WORK_DIR there keeps timing sets off the disk), where each
    sandbox mounts a private tmpfs of its own."""
    root = Path(tempfile.mkdtemp(prefix="kernelgrade-test-", dir="/dev/shm"))
    (root / "job-own").mkdir()
    try:
        yield root / "job-own"
    finally:
        shutil.rmtree(root)


def test_a_work_dir_on_dev_shm_is_bound_writable_and_hides_other_jobs(sandbox: Sandbox, shm_work_dir: Path) -> None:
    sibling = shm_work_dir.parent / "job-other"
    sibling.mkdir()
    (sibling / "marker.txt").write_text("another job's inputs")
    (shm_work_dir / "inputs.txt").write_text("the judge's")
    out = run(sandbox, shm_work_dir, snippet("""
with open("made-inside.txt", "w") as f:
    f.write("hello")
out["cwd"], out["inputs"] = os.getcwd(), open("inputs.txt").read()
out["seen"] = sorted(os.listdir(".."))
"""))
    assert out["cwd"] == str(shm_work_dir) and out["inputs"] == "the judge's"
    assert (shm_work_dir / "made-inside.txt").read_text() == "hello"
    assert "job-other" not in out["seen"]


def test_fork_bomb_is_contained_and_killed(sandbox: Sandbox, work_dir: Path) -> None:
    token = f"kg-bomb-{uuid.uuid4().hex}"
    code = snippet("""
import time
forked = 0
while forked < 5000:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    forked += 1
out["forked"] = forked
""") + "time.sleep(600)\n"
    child = start(sandbox, work_dir, f"# {token}\n" + code, limits=ResourceLimits(processes=64))
    try:
        reply = child.receive(60)
    finally:
        child.kill()
    assert reply["forked"] < 64, "the process limit did not stop the fork bomb"
    assert _wait_until_gone(token), "processes of the sandbox outlived its kill"


def _wait_until_gone(token: str, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not any(token.encode() in _cmdline(pid) for pid in os.listdir("/proc") if pid.isdigit()):
            return True
        time.sleep(0.1)
    return False


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_memory_cap_kills_the_child(sandbox: Sandbox, work_dir: Path) -> None:
    cgroups = getattr(sandbox.launcher, "cgroups", None)
    if cgroups is None or cgroups.memory_parent is None:
        pytest.skip(f"no memory cgroup here: {cgroups.describe() if cgroups else 'cgroups off'}")
    child = start(sandbox, work_dir, """
chunks = []
for i in range(64):
    chunks.append(b"x" * (32 * 1024 * 1024))
    print('{"mib": %d}' % (len(chunks) * 32), flush=True)
print('{"done": true}', flush=True)
""", limits=ResourceLimits(memory_bytes=256 * MiB))
    replies: list[dict[str, Any]] = []
    try:
        while True:
            replies.append(child.receive(60))
    except ChildGone:
        pass
    finally:
        child.kill()
    assert replies and "done" not in replies[-1] and replies[-1]["mib"] <= 256, f"past the cap: {replies[-1:]}"


def test_file_size_and_cpu_limits(sandbox: Sandbox, work_dir: Path) -> None:
    out = run(sandbox, work_dir, snippet("""
import resource
out["core"] = resource.getrlimit(resource.RLIMIT_CORE)[0]
out["cpu"] = resource.getrlimit(resource.RLIMIT_CPU)
try:
    with open("big.bin", "wb") as f:
        f.write(b"x" * (2 * 1024 * 1024))
    out["big"] = True
except OSError:
    out["big"] = False
"""), limits=ResourceLimits(file_bytes=MiB, cpu_seconds=30))
    # SIGXCPU at the soft limit, which names the cause; SIGKILL only at the hard one, for a child that ignores it.
    assert out == {"core": 0, "cpu": [30, 30 + isolation.CPU_KILL_AFTER_S], "big": False}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to place a child on one of them")
def test_a_child_runs_on_the_cpus_it_was_given(sandbox: Sandbox, work_dir: Path) -> None:
    """Builds go on cores away from the measurements (worker/cores.py); the sandbox's own steps keep that."""
    target = max(os.sched_getaffinity(0))
    out = run(sandbox, work_dir, snippet("out['cpus'] = sorted(os.sched_getaffinity(0))"), cpus=(target,))
    assert out == {"cpus": [target]}


def test_cpu_limit_stops_a_spinning_child(sandbox: Sandbox, work_dir: Path) -> None:
    child = start(sandbox, work_dir, "while True:\n    pass\n", limits=ResourceLimits(cpu_seconds=1))
    started = time.monotonic()
    try:
        with pytest.raises(ChildGone):
            child.receive(30)
    finally:
        child.kill()
    assert time.monotonic() - started < 20


def test_a_compile_child_at_its_cpu_limit_exits_with_the_status_that_says_so(sandbox: Sandbox, work_dir: Path) -> None:
    """Under unshare the child is its pid namespace's first process, which ignores SIGXCPU left at its default;
    the compile child's handler ends it all the same. The snippet lowers its own limit to a second from now
    once torch is imported, so that the real limit is reached at once."""
    if sandbox.python != sys.executable:
        pytest.skip("the compile child needs this interpreter's torch")
    code = snippet("""
import resource
from kernelgrade.evaluator.child.compile_child import exit_at_cpu_limit
exit_at_cpu_limit()
usage = resource.getrusage(resource.RUSAGE_SELF)
_, hard = resource.getrlimit(resource.RLIMIT_CPU)
resource.setrlimit(resource.RLIMIT_CPU, (int(usage.ru_utime + usage.ru_stime) + 1, hard))
while True:
    pass
""")
    child = start(sandbox, work_dir, code, limits=ResourceLimits(cpu_seconds=120))
    try:
        with pytest.raises(ChildGone):
            child.receive(120)
    finally:
        child.kill()
    assert child.proc.returncode == CPU_LIMIT_STATUS, child.log.text()[-2000:]


def test_a_crash_is_named_by_its_signal(sandbox: Sandbox, work_dir: Path) -> None:
    # A real fault: under unshare the child is its namespace's init, which ignores signals it sends itself.
    child = start(sandbox, work_dir, "import ctypes\nctypes.string_at(0)\n")
    try:
        with pytest.raises(ChildGone, match="SIGSEGV"):
            child.receive(60)
    finally:
        child.kill()


def test_a_gigabyte_of_output_is_drained_and_capped(sandbox: Sandbox, work_dir: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child = start(sandbox, work_dir, snippet("""
block = b"y" * (1024 * 1024)
for _ in range(1024):
    sys.stderr.buffer.write(block)
sys.stderr.flush()
"""))
    try:
        child.receive(120)
    finally:
        child.kill()
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert child.log.total == 1024 * MiB
    assert len(child.log.text()) < 128 * 1024
    assert grown_mib < 64, f"the judge grew by {grown_mib:.0f} MiB while draining the child's output"


def test_levels_are_reported(sandbox: Sandbox) -> None:
    name = "bwrap" if sandbox.launcher.level == "bwrap" else "unshare"
    assert sandbox.launcher.level == name
    assert make_launcher("none", allow_unsandboxed=True).level == "none"


def test_auto_picks_bwrap_where_it_works(bwrap: Sandbox) -> None:
    assert make_launcher("auto").level == "bwrap"
    assert make_launcher("auto", "bwrap").level == "bwrap"


def test_minimum_that_cannot_be_met_is_refused(tmp_path: Path) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    options = SandboxOptions(bwrap=str(broken), unshare=str(broken))
    with pytest.raises(SandboxUnavailable, match="Permission denied"):
        make_launcher("bwrap", options=options)
    with pytest.raises(SandboxUnavailable, match="no sandbox at or above 'unshare'"):
        make_launcher("auto", "unshare", options)
    with pytest.raises(SandboxUnavailable, match="below the required minimum"):
        make_launcher("none", "bwrap")
    assert make_launcher("auto", "none", options, allow_unsandboxed=True).level == "none"


def test_no_sandbox_only_with_the_explicit_opt_out(tmp_path: Path) -> None:
    broken = tmp_path / "missing-bwrap"
    options = SandboxOptions(bwrap=str(broken), unshare=str(broken))
    with pytest.raises(UnsandboxedRefused, match="apt-get install bubblewrap"):
        make_launcher("none")
    with pytest.raises(UnsandboxedRefused, match="no sandbox works here"):
        make_launcher("auto", options=options)
    assert make_launcher("none", allow_unsandboxed=True).level == "none"


def test_probe_runs_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelgrade.evaluator.sandbox import levels as sandbox_module

    calls: list[str] = []
    real = sandbox_module._probe

    def counting(level: str, options: SandboxOptions) -> str:
        calls.append(level)
        return real(level, options)

    monkeypatch.setattr(sandbox_module, "_probe", counting)
    options = SandboxOptions(bwrap=str(tmp_path / "missing-bwrap"))
    first, second = probe_level("bwrap", options), probe_level("bwrap", options)
    assert first == second != ""
    assert calls == ["bwrap"]


# --- the GPU path, checked without a GPU: which device nodes a run child would get ---

@pytest.fixture
def fake_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    dev, table = tmp_path / "dev", tmp_path / "gpus"
    dev.mkdir()
    for name in ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia0", "nvidia1", "nvidia2", "null"):
        (dev / name).write_text("")
    for minor, bus in enumerate(("0000:18:00.0", "0000:3b:00.0", "0000:86:00.0")):
        (table / bus).mkdir(parents=True)
        (table / bus / "information").write_text(
            f"Model: \t NVIDIA H100\nGPU UUID: \t GPU-{minor}{minor}{minor}\nBus Location: \t {bus}\n"
            f"Device Minor: \t {minor}\n")
    monkeypatch.setattr(gpu_nodes, "DEV", dev)
    monkeypatch.setattr(gpu_nodes, "DRIVER_TABLE", table)
    return dev


def test_gpu_nodes_are_the_one_gpu_only(fake_gpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_nodes, "_identity", lambda index: ("GPU-111", ""))
    access = gpu_nodes.gpu_access(0, {})
    assert [p.name for p in access.nodes] == ["nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia1"]
    assert access.visible_devices == "GPU-111"
    monkeypatch.setattr(gpu_nodes, "_identity", lambda index: ("", "0000:86:00.0"))
    assert gpu_nodes.gpu_access(0, {}).nodes[-1].name == "nvidia2"


def test_unmatched_gpu_is_refused(fake_gpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_nodes, "_identity", lambda index: ("GPU-999", ""))
    with pytest.raises(GpuNodesError):
        gpu_nodes.gpu_access(0, {})


def test_bwrap_command_binds_only_its_gpu(bwrap: Sandbox, work_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = (Path("/dev/nvidiactl"), Path("/dev/nvidia-uvm"), Path("/dev/nvidia3"))
    monkeypatch.setattr(bwrap_module, "gpu_access", lambda index, env: GpuAccess(nodes, "GPU-abc"))
    assert isinstance(bwrap.launcher, bwrap_module.BwrapLauncher)
    spec = ChildSpec((sys.executable,), child_env(work_dir, work_dir, {}), work_dir, gpu_index=3)
    args, env = bwrap.launcher.command(spec, Identity(65534, 65534, drop=True))
    bound = [args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"]
    assert bound == [str(n) for n in nodes]
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-abc"
    assert args.index("--dev") < args.index("--dev-bind")
    compile_spec = ChildSpec((sys.executable,), child_env(work_dir, work_dir, {}), work_dir, gpu_index=None)
    assert "--dev-bind" not in bwrap.launcher.command(compile_spec, Identity(65534, 65534, drop=True))[0]


def test_view_covers_then_binds_back_in_depth_order() -> None:
    args = bwrap_module.view_args([Path("/root")], [Path("/root/.pyenv/versions/3.11"), Path("/work/src")],
                                  [Path("/tmp/a/work/job-1")], [Path("/tmp"), Path("/dev/shm")])
    text = " ".join(args)
    assert text.index("--tmpfs /root") < text.index("--dir /root/.pyenv ") < text.index(
        "--dir /root/.pyenv/versions ") < text.index("--ro-bind /root/.pyenv/versions/3.11")
    assert "/work/src" not in text  # visible through the read-only root already
    assert "--dir /tmp/a --perms 0755 --dir /tmp/a/work --bind /tmp/a/work/job-1 /tmp/a/work/job-1" in text
    assert args[-2:] == ["--remount-ro", "/root"]


def test_result_records_the_sandbox_level(bwrap: Sandbox, make_request: Any) -> None:
    from kernelgrade.evaluator import Verdict, evaluate
    from kernelgrade.problems import find_builtin

    problem = find_builtin("add_relu")
    assert problem is not None
    source = ("import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
              "    def forward(self, a, b):\n        return torch.relu(a + b)\n")
    result = evaluate(make_request(problem.spec(), source, measure_timing=False), bwrap.launcher)
    assert result.verdict is Verdict.CORRECT, result.failure
    assert result.environment is not None and result.environment.sandbox == "bwrap"
    assert json.loads(result.to_json())["environment"]["sandbox"] == "bwrap"


def test_hand_over_never_gives_away_what_links_point_to(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root judge changes owners")
    outside = tmp_path / "judge-secret.txt"
    outside.write_text("not the child's")
    outside.chmod(0o600)
    shared = tmp_path / "ext"
    (shared / "kg_ext").mkdir(parents=True)
    (shared / "kg_ext" / "build.ninja").write_text("rule cc")
    (shared / "kg_ext" / "symlink").symlink_to(outside)
    (shared / "kg_ext" / "dirlink").symlink_to(tmp_path)
    os.link(outside, shared / "kg_ext" / "hardlink")
    work = tmp_path / "job"
    work.mkdir(mode=0o700)
    isolation.hand_over(work, [shared], Identity(UID_BASE + 7, 65534, drop=True))
    assert (outside.stat().st_gid, stat.S_IMODE(outside.stat().st_mode)) == (0, 0o600)
    build = (shared / "kg_ext" / "build.ninja").stat()
    assert build.st_gid == 65534 and build.st_mode & stat.S_IWGRP
    assert (shared / "kg_ext").stat().st_mode & stat.S_ISGID
    assert (work.stat().st_uid, work.stat().st_gid) == (UID_BASE + 7, 65534)


@pytest.mark.gpu
def test_gpu_child_sees_exactly_its_gpu(bwrap: Sandbox, work_dir: Path) -> None:
    import torch

    index = torch.cuda.device_count() - 1  # the last GPU: a wrong mapping would most likely show device 0
    out = run(bwrap, work_dir, snippet("""
import glob
import torch
out["count"] = torch.cuda.device_count()
out["uuid"] = str(torch.cuda.get_device_properties(0).uuid)
out["sum"] = float((torch.ones(1024, device="cuda") * 2).sum())
out["nodes"] = sorted(n for n in glob.glob("/dev/nvidia[0-9]*"))
"""), timeout=120, gpu_index=index)
    assert out["count"] == 1 and out["sum"] == 2048.0
    assert out["uuid"] == str(torch.cuda.get_device_properties(index).uuid)
    assert len(out["nodes"]) == 1, f"the child can open other GPUs' nodes: {out['nodes']}"


def test_an_interpreter_under_a_private_home_is_reached_without_opening_the_home(
        sandbox: Sandbox, work_dir: Path, tmp_path: Path) -> None:
    """The venv of `make serve` under a root judge's 0700 home: the child (another uid) must run that
    interpreter and see exactly its prefix, and nothing else of the home."""
    if os.geteuid() != 0:
        pytest.skip("only a root judge's child runs under another uid, which a 0700 home keeps out")
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "credentials.txt").write_text("the operator's private file")
    venv = home / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    code = snippet(f"""
out["prefix"] = sys.prefix
out["home"] = sorted(os.listdir({str(home)!r}))
out["credentials"] = os.path.exists({str(home / "credentials.txt")!r})
""")
    spec = ChildSpec((str(venv / "bin" / "python"), "-s", "-c", code), child_env(work_dir, work_dir, {}), work_dir,
                     readable=(package_root(), venv), hidden=(work_dir.parent,))
    child = ChildProcess(sandbox.launcher.popen(spec))
    try:
        out = child.receive(60)
    except ChildGone:
        pytest.fail(f"the interpreter under a 0700 home did not start: {child.log.text()[-2000:]}")
    finally:
        child.kill()
    assert out == {"prefix": str(venv), "home": ["venv"], "credentials": False}


def test_bwrap_child_sees_no_host_accounts_or_other_roots(bwrap: Sandbox, work_dir: Path) -> None:
    out = run(bwrap, work_dir, snippet("""
out["root"] = sorted(os.listdir("/"))
out["passwd"] = open("/etc/passwd").read()
out["hosts"] = os.path.exists("/etc/hosts") or os.path.exists("/etc/hostname")
out["uid_name"] = __import__("pwd").getpwuid(os.getuid()).pw_name
"""))
    assert "root:" not in out["passwd"] and out["uid_name"] == "kernelgrade"
    assert out["hosts"] is False
    assert not {"home", "var", "srv", "run", "mnt", "boot"} & set(out["root"]), out["root"]


def test_a_shared_region_reaches_the_child_at_its_own_number(sandbox: Sandbox, work_dir: Path) -> None:
    """The run child's outputs cross through a region the judge made (wire/shared_region.py): every level
    passes its descriptor on, at the number the judge tells the child."""
    region = SharedRegion.create(pin=False)
    try:
        region.reserve(1)
        out = run(sandbox, work_dir, snippet(f"""
import mmap
memory = mmap.mmap({region.fd}, 0)
memory[:5] = b"hello"
out["size"] = len(memory)
"""), shared_fds=(region.fd,))
        view = region.view(5)
        assert out["size"] == region.reserved and view is not None and bytes(view) == b"hello"
    finally:
        region.close()
