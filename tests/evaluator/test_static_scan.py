"""The static scan: each rule fires on the construct it names, at the right line, and stays quiet on the
plumbing honest submissions use."""

from __future__ import annotations

import textwrap

from kernelgrade.evaluator import Severity
from kernelgrade.evaluator.integrity.static_scan import reference_operations, scan_submission
from kernelgrade.evaluator.request import TorchOps

REFERENCE = textwrap.dedent('''
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 3)

        def forward(self, a, b):
            return torch.relu(self.conv(a) @ b).sum(dim=1)
''')

EXTENSION_HEADER = textwrap.dedent('''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline
''')


def scan(body: str, policy: TorchOps = TorchOps.REPORT) -> dict[str, tuple[Severity, str]]:
    findings = scan_submission(EXTENSION_HEADER + textwrap.dedent(body), REFERENCE, policy)
    return {f.code: (f.severity, f.message) for f in findings}


def test_reference_operations_are_the_calls_that_compute_the_answer() -> None:
    assert reference_operations(REFERENCE) == {"relu", "matmul", "sum", "Conv2d"}


def test_plumbing_around_a_kernel_reports_nothing() -> None:
    found = scan('''
        ext = load_inline(name="k", cpp_sources="torch::Tensor run(torch::Tensor a);", functions=["run"])

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.ext = ext

            def forward(self, a, b):
                out = torch.empty_like(a.contiguous())
                return self.ext.run(a.contiguous().view(-1)).view_as(out)
    ''')
    assert found == {}


def test_calling_the_references_operations_is_reported_by_default_and_flagged_when_forbidden() -> None:
    body = '''
        class ModelNew(nn.Module):
            def forward(self, a, b):
                return torch.relu(a @ b)
    '''
    severity, message = scan(body)["static_torch_ops"]
    assert severity is Severity.REVIEW
    assert "line 8: calls torch.relu()" in message and "the @ operator" in message
    assert scan(body, TorchOps.FORBID)["static_torch_ops"][0] is Severity.FLAG


def test_an_extension_function_named_like_a_torch_op_is_not_torch() -> None:
    found = scan('''
        ext = load_inline(name="k", cpp_sources="torch::Tensor relu(torch::Tensor a);", functions=["relu"])

        class ModelNew(nn.Module):
            def forward(self, a, b):
                return ext.relu(a)
    ''')
    assert "static_torch_ops" not in found


def test_try_except_falling_back_to_torch() -> None:
    found = scan('''
        ext = load_inline(name="k", cpp_sources="torch::Tensor run(torch::Tensor a);", functions=["run"])

        class ModelNew(nn.Module):
            def forward(self, a, b):
                try:
                    return ext.run(a)
                except RuntimeError:
                    return torch.nn.functional.relu(a)
    ''')
    assert "line 10: try/except whose handler (line 12)" in found["static_fallback"][1]


def test_a_handler_that_only_reraises_is_not_a_fallback() -> None:
    found = scan('''
        class ModelNew(nn.Module):
            def forward(self, a, b):
                try:
                    return a.contiguous()
                except RuntimeError as exc:
                    raise ValueError("bad input") from exc
    ''')
    assert "static_fallback" not in found


def test_subclassing_or_calling_model() -> None:
    found = scan('''
        class Model(nn.Module):
            def forward(self, a, b):
                return torch.relu(a)

        class ModelNew(Model):
            pass
    ''')
    assert "class ModelNew derives from Model" in found["static_subclasses_model"][1]
    assert "static_torch_ops" not in found  # the copied reference itself is not scanned


def test_an_extension_that_is_never_called() -> None:
    found = scan('''
        ext = load_inline(name="k", cpp_sources="torch::Tensor run(torch::Tensor a);", functions=["run"])

        class ModelNew(nn.Module):
            def forward(self, a, b):
                return a.contiguous()
    ''')
    assert "builds run into ext but never calls it" in found["static_unlaunched_extension"][1]


def test_threads_processes_introspection_patching_flags_and_memory() -> None:
    found = scan('''
        import gc, os, sys, threading, time

        time.perf_counter = lambda: 0.0
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.cuda.set_per_process_memory_fraction(0.5)
        frame = sys._getframe(1)
        secret = os.environ.get("KEY")

        class ModelNew(nn.Module):
            def forward(self, a, b):
                if os.fork() == 0:
                    os._exit(0)
                return a
    ''')
    assert "imports threading" in found["static_threads_processes"][1]
    assert "calls os.fork()" in found["static_threads_processes"][1]
    assert "imports gc" in found["static_introspection"][1] and "sys._getframe" in found["static_introspection"][1]
    assert "reassigns time.perf_counter" in found["static_monkeypatch"][1]
    assert "sets torch.backends.cuda.matmul.allow_tf32" in found["static_precision_flags"][1]
    assert "set_per_process_memory_fraction" in found["static_memory_controls"][1]
    assert "os.environ" in found["static_environment_or_network"][1]
    assert all(severity is Severity.REVIEW for severity, _ in found.values())


def test_native_sources_give_line_numbers_and_ignore_comments() -> None:
    found = scan('''
        source = """
        #include <torch/extension.h>
        // cudaStreamCreate would be suspicious here, but this is a comment
        static std::unordered_map<int64_t, torch::Tensor> cache;
        void run() {
            cudaStream_t s;
            cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20);
            std::thread worker([] {});
        }
        """
    ''')
    assert "line 9: native source uses static std::unordered_map" in found["static_native_cache"][1]
    assert "line 12: native source uses cudaStreamCreateWithFlags" in found["static_side_stream"][1]
    assert "line 8" not in found["static_side_stream"][1]
    assert "PersistingL2" in found["static_l2_persistence"][1]
    assert "std::thread" in found["static_native_threads"][1]


def test_unparseable_source_gives_no_findings() -> None:
    assert scan_submission("def broken(:\n", REFERENCE) == []
