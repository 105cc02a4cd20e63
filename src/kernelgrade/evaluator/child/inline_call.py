"""The shape the compile child's load_inline wrappers share (header_pch.py, lean_header.py): each reads the
call's arguments by name, and each keeps load_inline's signature so that the next wrapper out can read them
too."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


def wrapping(original: Callable[..., Any], handle: Callable[[inspect.BoundArguments], Any]) -> Callable[..., Any]:
    """load_inline that hands `handle` the call's arguments bound to `original`'s signature. A call that does
    not fit it goes to `original` as it is, so that load_inline itself says what is wrong."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def load_inline(*args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)
        return handle(bound)

    return load_inline
