"""The lock of one torch extension build directory (`<TORCH_EXTENSIONS_DIR>/<name>/lock`), as the compile child
takes it and the judge checks it.

torch's own FileBaton is a file made with O_EXCL and removed when the build ends: a build killed before that
(its judge's server killed, its child killed at a deadline) leaves the file behind, and every later build of
the same directory waits on it until its own deadline. Here the owner also holds the file with flock(2) for
as long as it lives. The kernel lets go of a flock when its holder dies, however it dies, so a lock file that
nobody holds is stale and may be removed, and one that is held belongs to a live build and is waited on.

The file appears under its name already held: it is made under a name of its own, locked, then linked to
`lock`, so there is never a moment when a live owner's lock looks stale. The owner removes the name before it
lets go, so whoever gets the flock of an inode still named `lock` knows its owner ended without cleaning up.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from pathlib import Path

LOCK_NAME = "lock"  # torch's name for it, in each extension's build directory


def acquire(path: Path) -> int:
    """Take the lock, waiting while a live owner holds it and taking over from a dead one; returns the
    descriptor that holds it, for release()."""
    while True:
        fd = _link_held(path)
        if fd is not None:
            return fd
        _wait_for_owner(path)


def release(path: Path, fd: int) -> None:
    """Remove the name first, then let go: a waiter that gets the flock then sees the name gone or reused."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    os.close(fd)


def remove_if_stale(path: Path) -> bool:
    """Remove the lock if its owner is gone; True if it was removed. A live owner's lock is left alone."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return _unlink_if_still(path, fd)
    finally:
        os.close(fd)


def held(path: Path) -> bool:
    """True while a live owner holds the lock at `path`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def locks_in(extensions_dir: Path) -> list[Path]:
    """The lock files of every build directory under an extensions dir."""
    return sorted(extensions_dir.glob(f"*/{LOCK_NAME}"))


def _link_held(path: Path) -> int | None:
    """Make a held file under a name of its own and link it to `path`; None if `path` exists."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    # Readable by the group: a later build of the same entry may run as another sandbox uid and must be able
    # to open the file to see whether its owner lives.
    fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o664)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.link(temporary, path)
    except FileExistsError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    finally:
        os.unlink(temporary)
    return fd


def _wait_for_owner(path: Path) -> None:
    """Block until the owner of the lock at `path` lets go (by releasing it, or by dying); remove it if the
    owner died holding it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        _unlink_if_still(path, fd)
    finally:
        os.close(fd)


def _unlink_if_still(path: Path, fd: int) -> bool:
    """Unlink `path` if it still names the inode open at `fd` (whose flock the caller holds): the name may have
    been released and taken by a new owner meanwhile."""
    opened = os.fstat(fd)
    try:
        current = os.stat(path)
    except FileNotFoundError:
        return False
    if (current.st_dev, current.st_ino) != (opened.st_dev, opened.st_ino):
        return False
    os.unlink(path)
    return True
