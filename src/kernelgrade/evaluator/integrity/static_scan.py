"""A static scan of the submission's source, stored with the result (docs/threats.md 16, and early warnings for
2, 4, 7, 8, 10, 14 and 19).

The scan reads the Python and the C++/CUDA text embedded in it; it never decides a verdict by itself. Most
rules report at REVIEW severity: each names a construct that honest submissions rarely need and that the
runtime checks then watch for. Calling the reference's own torch operations is reported (REVIEW) by
default and flagged only where the problem's policy forbids torch operations.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kernelgrade.evaluator.request import TorchOps
from kernelgrade.evaluator.result import Finding, Severity

# Tensor plumbing that any wrapper around a kernel does; calling these is not computing the answer.
PLUMBING = frozenset({
    "contiguous", "view", "reshape", "size", "to", "cuda", "cpu", "float", "double", "half", "clone", "detach",
    "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_empty",
    "new_zeros", "expand", "expand_as", "unsqueeze", "squeeze", "permute", "transpose", "t", "flatten",
    "item", "numel", "dim", "stride", "is_contiguous", "data_ptr", "type", "device", "dtype", "shape",
    "chunk", "split", "narrow", "select", "index_select", "cat", "stack", "tensor", "as_tensor",
    "from_numpy", "arange", "manual_seed", "no_grad", "synchronize", "current_stream", "Size",
})
# Python modules whose use lets work outlive forward() (docs/threats.md 2).
CONCURRENCY_MODULES = frozenset({"threading", "_thread", "multiprocessing", "concurrent", "subprocess", "asyncio",
                                 "signal", "sched"})
CONCURRENCY_CALLS = frozenset({"fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "spawnl",
                               "spawnv", "spawnve", "execv", "execve", "kill", "killpg"})
# Modules and attributes that reach into the harness's or the interpreter's internals (docs/threats.md 4, 10, 18).
INTROSPECTION_MODULES = frozenset({"gc", "inspect", "ctypes", "importlib", "builtins", "traceback", "dis",
                                   "marshal", "sysconfig", "pickle", "mmap", "weakref"})
INTROSPECTION_ATTRS = frozenset({"_getframe", "settrace", "setprofile", "_current_frames", "modules", "f_locals",
                                 "f_globals", "f_back", "gi_frame", "__code__", "__globals__", "__closure__",
                                 "cell_contents", "__builtins__", "get_objects", "get_referrers",
                                 "get_referents", "__subclasses__"})
NETWORK_MODULES = frozenset({"socket", "urllib", "http", "requests", "httpx", "ftplib", "smtplib", "ssl"})
# Module roots whose attributes a submission has no business reassigning (docs/threats.md 4, 17).
PATCHABLE_ROOTS = frozenset({"torch", "time", "builtins", "sys", "os", "kernelgrade", "json", "threading", "F",
                             "nn", "math", "gc"})
PRECISION_CALLS = frozenset({"set_float32_matmul_precision", "set_default_dtype", "set_default_tensor_type",
                             "set_flush_denormal", "set_autocast_enabled", "set_autocast_gpu_dtype"})
MEMORY_CALLS = frozenset({"set_per_process_memory_fraction", "caching_allocator_alloc", "caching_allocator_delete",
                          "_set_allocator_settings", "change_current_allocator", "set_allocator_settings",
                          "CUDAPluggableAllocator", "reset_peak_memory_stats", "_record_memory_history"})

# Patterns in embedded C++/CUDA sources: (code, regex, why it matters).
NATIVE_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("static_side_stream", re.compile(r"cudaStreamCreate\w*|getStreamFromPool|cudaStreamNonBlocking"),
     "creates its own CUDA stream: work there escapes the timing events unless joined to the current stream"),
    ("static_l2_persistence",
     re.compile(r"PersistingL2|accessPolicyWindow|cudaAccessPropertyPersisting|cudaStreamSetAttribute"),
     "configures persisting L2 cache lines, which survive the harness's cache flush between timed calls"),
    ("static_native_threads", re.compile(r"std::thread|pthread_create|std::async|\bfork\s*\("),
     "starts host threads or processes from C++; their work can outlive forward()"),
    ("static_native_cache",
     re.compile(r"\bstatic\s+(?:std::(?:unordered_map|map|vector|optional)|torch::Tensor|at::Tensor|"
                r"c10::optional|void\s*\*|float\s*\*|const\s+void\s*\*|int64_t\s+last|uintptr_t)"),
     "keeps tensors, pointers or maps in C++ statics across calls (a result cache keyed on pointers?)"),
    ("static_environment_or_network", re.compile(r"/proc/|getenv\s*\(|\bsocket\s*\(|\bdlopen\s*\(|\bdlsym\s*\("),
     "reads the process table, the environment, sockets or other libraries from C++"),
    ("static_other_devices", re.compile(r"cudaSetDevice\s*\(\s*[1-9]|cudaMemcpyPeer|cudaDeviceEnablePeerAccess"),
     "uses GPUs other than the one it was given"),
)
# A string constant is treated as native source when it contains one of these.
NATIVE_MARKERS = ("#include", "__global__", "torch::", "at::Tensor", "PYBIND11", "extern \"C\"")
# Each finding lists at most this many places; more would bury the message.
MAX_PLACES = 5


@dataclass(frozen=True)
class Hit:
    code: str
    line: int
    what: str


_RULE_MESSAGES: dict[str, str] = {
    "static_fallback": "catches exceptions and computes with torch in the handler, so a failing kernel can be"
                       " hidden behind a PyTorch fallback",
    "static_subclasses_model": "builds on a class named Model (the reference's name), so forward may run the"
                               " reference itself",
    "static_torch_ops": "calls the operations the reference uses to compute its answer, so the measured time"
                        " may be PyTorch's rather than the submission's kernel's",
    "static_unlaunched_extension": "compiles an extension whose functions are never called, so the kernel it"
                                   " builds may not be what computes the output",
    "static_threads_processes": "uses threads, processes or signals, which can finish work after forward()"
                                " returns",
    "static_introspection": "reaches into interpreter or harness internals (frames, gc, ctypes, module"
                            " tables), which can read or alter the harness",
    "static_monkeypatch": "reassigns attributes of torch, time or other shared modules, which can change the"
                          " harness's clock or checks",
    "static_precision_flags": "changes global numeric settings (TF32, default dtype, matmul precision)",
    "static_memory_controls": "changes the CUDA caching allocator's settings or limits",
    "static_environment_or_network": "reads the environment, files or the network",
}


def scan_submission(source: str, reference_source: str, torch_ops: TorchOps = TorchOps.REPORT) -> list[Finding]:
    """Findings for a source that parsed (validate.py rejects the rest); one finding per rule."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    reference_ops = reference_operations(reference_source)
    hits = [*_python_hits(tree, reference_ops), *_native_hits(tree)]
    return _findings(hits, torch_ops)


def _findings(hits: list[Hit], torch_ops: TorchOps) -> list[Finding]:
    by_code: dict[str, list[Hit]] = {}
    for hit in hits:
        by_code.setdefault(hit.code, []).append(hit)
    findings = []
    for code, group in by_code.items():
        places = "; ".join(f"line {h.line}: {h.what}" for h in group[:MAX_PLACES])
        more = f" (and {len(group) - MAX_PLACES} more)" if len(group) > MAX_PLACES else ""
        why = _RULE_MESSAGES.get(code) or next(w for c, _, w in NATIVE_RULES if c == code)
        severity = Severity.REVIEW
        if code == "static_torch_ops" and torch_ops is TorchOps.FORBID:
            severity, why = Severity.FLAG, why + "; this problem forbids torch operations that compute the answer"
        findings.append(Finding(code, severity, f"the submission {why} ({places}{more})"))
    return findings


def reference_operations(reference_source: str) -> frozenset[str]:
    """Names of the torch operations and nn layers the reference's Model uses to compute its output."""
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return frozenset()
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        return frozenset()
    names = {_called_name(node) for node in ast.walk(model) if isinstance(node, ast.Call)}
    if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult) for n in ast.walk(model)):
        names.add("matmul")
    return frozenset(n for n in names if n and n not in PLUMBING and not n.startswith("_") and n not in
                     {"super", "__init__", "register_buffer", "Parameter", "forward"})


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        if isinstance(func.value, ast.Name) and func.value.id == "self":
            return ""  # self.layer(x): the layer's constructor is what names the operation
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _python_hits(tree: ast.Module, reference_ops: frozenset[str]) -> Iterator[Hit]:
    scanned = [n for n in tree.body if not _is_reference_copy(n)]
    extensions = _extensions(tree)
    modules = _extension_aliases(tree, extensions)
    for node in _walk(scanned):
        yield from _import_hits(node)
        if isinstance(node, ast.Call):
            yield from _call_hits(node, reference_ops, modules)
        elif isinstance(node, ast.Attribute):
            yield from _attribute_hits(node)
        elif isinstance(node, ast.Try):
            yield from _fallback_hits(node, reference_ops)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            yield from _patch_hits(node)
        elif isinstance(node, ast.ClassDef):
            yield from _subclass_hits(node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult) and "matmul" in reference_ops:
            yield Hit("static_torch_ops", node.lineno, "the @ operator (a torch matmul)")
    yield from _unlaunched(tree, extensions)


def _is_reference_copy(node: ast.stmt) -> bool:
    """A copy of the reference's own definitions is not what runs; get_inputs is never used either."""
    if isinstance(node, ast.ClassDef) and node.name == "Model":
        return True
    return isinstance(node, ast.FunctionDef) and node.name in {"get_inputs", "get_init_inputs"}


def _walk(nodes: Iterable[ast.AST]) -> Iterator[ast.AST]:
    for node in nodes:
        yield from ast.walk(node)


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        parts.append(_dotted(node.func) + "()")
    return ".".join(reversed(parts))


def _import_hits(node: ast.AST) -> Iterator[Hit]:
    if isinstance(node, ast.Import):
        modules = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        modules = [node.module or ""]
    else:
        return
    for module in modules:
        root = module.split(".")[0]
        code = _module_rule(root)
        if code:
            yield Hit(code, node.lineno, f"imports {module}")


def _module_rule(root: str) -> str:
    if root in CONCURRENCY_MODULES:
        return "static_threads_processes"
    if root in INTROSPECTION_MODULES:
        return "static_introspection"
    if root in NETWORK_MODULES:
        return "static_environment_or_network"
    return ""


def _call_hits(call: ast.Call, reference_ops: frozenset[str], extension_names: frozenset[str]) -> Iterator[Hit]:
    name = _dotted(call.func)
    last = name.rsplit(".", 1)[-1]
    if last in CONCURRENCY_CALLS and name.startswith("os."):
        yield Hit("static_threads_processes", call.lineno, f"calls {name}()")
    if name in {"__import__", "getattr", "setattr", "delattr", "eval", "exec", "compile", "globals", "vars"}:
        yield from _dynamic_hits(call, name)
    if last in PRECISION_CALLS:
        yield Hit("static_precision_flags", call.lineno, f"calls {name}()")
    if last in MEMORY_CALLS:
        yield Hit("static_memory_controls", call.lineno, f"calls {name}()")
    if name in {"open", "os.getenv", "os.open", "io.open"} or name.startswith(("os.environ", "pathlib")):
        yield Hit("static_environment_or_network", call.lineno, f"calls {name}()")
    receiver = name.rsplit(".", 1)[0] if "." in name else ""
    if last in reference_ops and receiver != "self" and receiver not in extension_names:
        yield Hit("static_torch_ops", call.lineno, f"calls {name}()")


def _extension_aliases(tree: ast.Module, extensions: list[Extension]) -> frozenset[str]:
    """Names under which the built extension modules are kept (`ext`, `self.ext = ext`): calls through them
    run the submission's own code even when a function is named like a torch operation."""
    names = {e.variable for e in extensions if e.variable}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _dotted(node.value) in names:
            names.update(_dotted(t) for t in node.targets if isinstance(t, ast.Name | ast.Attribute))
    return frozenset(names)


def _dynamic_hits(call: ast.Call, name: str) -> Iterator[Hit]:
    if name in {"setattr", "delattr"} and call.args and _patchable(call.args[0]):
        yield Hit("static_monkeypatch", call.lineno, f"{name}() on {_dotted(call.args[0])}")
    elif name in {"__import__", "eval", "exec", "compile", "globals", "vars"}:
        yield Hit("static_introspection", call.lineno, f"calls {name}()")
    elif name == "getattr" and len(call.args) > 1 and not isinstance(call.args[1], ast.Constant):
        yield Hit("static_introspection", call.lineno, "getattr() with a computed name")


def _attribute_hits(node: ast.Attribute) -> Iterator[Hit]:
    nn_module_method = node.attr == "modules" and _dotted(node.value) != "sys"  # self.modules() is nn.Module's
    if node.attr in INTROSPECTION_ATTRS and not nn_module_method:
        yield Hit("static_introspection", node.lineno, f"uses {_dotted(node)}")
    elif _dotted(node) == "os.environ":
        yield Hit("static_environment_or_network", node.lineno, "reads os.environ")


def _patch_hits(node: ast.Assign | ast.AugAssign | ast.Delete) -> Iterator[Hit]:
    targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
    for target in targets:
        for element in target.elts if isinstance(target, ast.Tuple) else [target]:
            if not isinstance(element, ast.Attribute):
                continue
            dotted = _dotted(element)
            if dotted.startswith("torch.backends."):
                yield Hit("static_precision_flags", node.lineno, f"sets {dotted}")
            elif _patchable(element.value):
                yield Hit("static_monkeypatch", node.lineno, f"reassigns {dotted}")


def _patchable(target: ast.expr) -> bool:
    dotted = _dotted(target)
    return dotted.split(".")[0] in PATCHABLE_ROOTS and dotted != "self"


def _fallback_hits(node: ast.Try, reference_ops: frozenset[str]) -> Iterator[Hit]:
    for handler in node.handlers:
        for inner in _walk(handler.body):
            if isinstance(inner, ast.Call):
                name = _dotted(inner.func)
                last = name.rsplit(".", 1)[-1]
                torchy = name.startswith(("torch.", "F.", "nn.")) and last not in PLUMBING
                if torchy or last in reference_ops:
                    yield Hit("static_fallback", node.lineno,
                              f"try/except whose handler (line {handler.lineno}) calls {name}()")
                    return


def _subclass_hits(node: ast.ClassDef) -> Iterator[Hit]:
    for base in node.bases:
        if _dotted(base).rsplit(".", 1)[-1] == "Model":
            yield Hit("static_subclasses_model", node.lineno, f"class {node.name} derives from Model")
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call) and _dotted(inner.func) in {"Model", "super().forward"}:
            yield Hit("static_subclasses_model", inner.lineno, f"{node.name} calls {_dotted(inner.func)}()")


@dataclass(frozen=True)
class Extension:
    variable: str  # "" when the built module is not kept in a name
    functions: tuple[str, ...]
    line: int


def _extensions(tree: ast.Module) -> list[Extension]:
    found = []
    for node in ast.walk(tree):
        value = node.value if isinstance(node, ast.Assign | ast.Expr) else None
        if not isinstance(value, ast.Call) or _dotted(value.func).rsplit(".", 1)[-1] not in {"load_inline", "load"}:
            continue
        functions = _functions_keyword(value)
        if functions is None:
            continue
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        variable = _dotted(target) if isinstance(target, ast.Name | ast.Attribute) else ""
        found.append(Extension(variable, functions, value.lineno))
    return found


def _functions_keyword(call: ast.Call) -> tuple[str, ...] | None:
    for keyword in call.keywords:
        if keyword.arg == "functions" and isinstance(keyword.value, ast.List | ast.Tuple):
            names = [e.value for e in keyword.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            return tuple(names) if len(names) == len(keyword.value.elts) else None
        if keyword.arg == "functions" and isinstance(keyword.value, ast.Constant) and isinstance(
                keyword.value.value, str):
            return (keyword.value.value,)
    return None


def _unlaunched(tree: ast.Module, extensions: list[Extension]) -> Iterator[Hit]:
    """Functions exported by load_inline that nothing in the file refers to (by attribute or by getattr)."""
    referenced = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    referenced |= {_getattr_name(n) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for extension in extensions:
        if extension.functions and not any(f in referenced for f in extension.functions):
            kept = f" into {extension.variable}" if extension.variable else ""
            yield Hit("static_unlaunched_extension", extension.line,
                      f"builds {', '.join(extension.functions)}{kept} but never calls it")


def _getattr_name(call: ast.Call) -> str:
    """The constant name in getattr(module, "name"), else ""."""
    if _dotted(call.func) == "getattr" and len(call.args) > 1 and isinstance(call.args[1], ast.Constant):
        return str(call.args[1].value)
    return ""


def _native_hits(tree: ast.Module) -> Iterator[Hit]:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value
        if not any(marker in text for marker in NATIVE_MARKERS):
            continue
        for code, pattern, _why in NATIVE_RULES:
            for match in pattern.finditer(_without_comments(text)):
                line = node.lineno + text.count("\n", 0, match.start())
                yield Hit(code, line, f"native source uses {match.group(0).strip()}")


def _without_comments(text: str) -> str:
    """C++ comments blanked out, keeping every newline so that match offsets still give line numbers."""
    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, text, flags=re.DOTALL)
