"""Persisting-L2 controls (docs/threats.md 8), through the CUDA driver API that every CUDA process has loaded.

A kernel can set aside part of the L2 for "persisting" lines (cudaLimitPersistingL2CacheSize plus an access
policy window on its stream); such lines survive the harness's cache flush, so inputs stay hot from one
timed call to the next. Before timing, the harness sets the limit back to 0 and clears the current stream's
window; before every timed call it demotes all persisting lines to normal ones, which the flush then evicts.
PyTorch exposes none of this, so the calls go through ctypes.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE = 108
# sizeof(CUstreamAttrValue): a union padded to 64 bytes in CUDA 11.x through 13.x; the access policy window
# (pointer, size_t, float, two enums) sits at its start, and all zeros means "no window".
ATTR_VALUE_BYTES = 64


@dataclass(frozen=True)
class L2State:
    """What the judge records: whether persisting L2 could be controlled, and what the submission set."""

    supported: bool
    limit_bytes: int  # the persisting set-aside in force when read
    window_bytes: int  # the current stream's access policy window size when read
    status: str  # "reset", "unsupported: ...", "failed: ..."


class PersistingL2:
    def __init__(self) -> None:
        self._cuda: ctypes.CDLL | None = None
        self.problem = ""
        try:
            # By soname: a CUDA process has it loaded already, and no search (which would spawn ldconfig) runs.
            self._cuda = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            self.problem = f"the CUDA driver library could not be opened: {exc}"

    def _call(self, name: str, *args: object) -> int:
        if self._cuda is None:
            return -1
        result: int = getattr(self._cuda, name)(*args)
        return result

    def max_bytes(self, device_ordinal: int) -> int:
        value = ctypes.c_int(0)
        code = self._call("cuDeviceGetAttribute", ctypes.byref(value),
                          CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, ctypes.c_int(device_ordinal))
        return value.value if code == 0 else 0

    def limit(self) -> int:
        value = ctypes.c_size_t(0)
        code = self._call("cuCtxGetLimit", ctypes.byref(value), CU_LIMIT_PERSISTING_L2_CACHE_SIZE)
        return int(value.value) if code == 0 else 0

    def window_bytes(self, stream: int) -> int:
        raw = (ctypes.c_ubyte * ATTR_VALUE_BYTES)()
        code = self._call("cuStreamGetAttribute", ctypes.c_void_p(stream), CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                          ctypes.byref(raw))
        # num_bytes is the size_t right after the base pointer.
        return int(ctypes.c_size_t.from_buffer(raw, ctypes.sizeof(ctypes.c_void_p)).value) if code == 0 else 0

    def demote_lines(self) -> None:
        """Turn every persisting line into a normal one, so the next flush evicts it."""
        self._call("cuCtxResetPersistingL2Cache")

    def reset(self, device_ordinal: int, stream: int) -> L2State:
        """Limit to 0, no window on `stream`, no persisting lines; says what was in force before."""
        if self._cuda is None:
            return L2State(False, 0, 0, f"unsupported: {self.problem}")
        if self.max_bytes(device_ordinal) == 0:
            return L2State(False, 0, 0, "unsupported: this device has no persisting L2 set-aside")
        limit, window = self.limit(), self.window_bytes(stream)
        codes = [self._call("cuCtxSetLimit", CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0)),
                 self._call("cuStreamSetAttribute", ctypes.c_void_p(stream), CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW,
                            ctypes.byref((ctypes.c_ubyte * ATTR_VALUE_BYTES)())),
                 self._call("cuCtxResetPersistingL2Cache")]
        failed = [c for c in codes if c != 0]
        return L2State(True, limit, window, f"failed: CUDA driver error {failed[0]}" if failed else "reset")
