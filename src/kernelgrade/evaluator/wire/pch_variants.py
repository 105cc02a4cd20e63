"""The names of the flag sets a precompiled torch/extension.h is built for: the compile child reports the
variant a load_inline call wanted (child/header_pch.py), and the judge builds that variant (host/header_pch.py).
"""

from __future__ import annotations

from collections.abc import Mapping

# The flag sets a PCH is built for, by name: none (load_inline's own flags) and the -O levels submissions
# ask for most. A PCH is only valid for the optimisation level it was built with (GCC compares __OPTIMIZE__
# and __NO_INLINE__), and each one is about 0.8 GB, so other flags simply build without one.
VARIANT_FLAGS: Mapping[str, tuple[str, ...]] = {"plain": (), "O2": ("-O2",), "O3": ("-O3",)}


def variant_name(flags: tuple[str, ...], with_cuda: bool) -> str | None:
    """`cuda-O3`, `cpu-plain`, ...: with_cuda changes the include dirs the header is compiled with."""
    base = next((name for name, known in VARIANT_FLAGS.items() if known == flags), None)
    return None if base is None else f"{'cuda' if with_cuda else 'cpu'}-{base}"


def variant_flags(variant: str) -> tuple[bool, tuple[str, ...]] | None:
    """The judge's reading of a variant name (which the compile child reports): with_cuda and the flags."""
    kind, _, base = variant.partition("-")
    if kind not in ("cpu", "cuda") or base not in VARIANT_FLAGS:
        return None
    return kind == "cuda", VARIANT_FLAGS[base]
