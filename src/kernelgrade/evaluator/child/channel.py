"""The child's end of the judge's channel.

At start the child moves the channel off the standard descriptors, so that whatever the submission
prints (compiler logs, debug output) goes to the captured stderr and cannot be mistaken for a reply.
"""

from __future__ import annotations

import json
import os
import sys
from typing import BinaryIO

from kernelgrade.evaluator.codec import JSONValue


class ChildChannel:
    def __init__(self, commands: BinaryIO, replies: BinaryIO) -> None:
        self._commands = commands
        self._replies = replies

    @classmethod
    def from_stdio(cls) -> ChildChannel:
        sys.stdout.flush()
        commands = os.fdopen(os.dup(0), "rb")
        replies = os.fdopen(os.dup(1), "wb")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        return cls(commands, replies)

    def receive(self) -> bytes | None:
        """The next command line, as sent (the protocol reads it); None once the judge has closed the pipe."""
        line = self._commands.readline()
        return line or None

    def send(self, message: dict[str, JSONValue]) -> None:
        self._replies.write(json.dumps(message, allow_nan=True).encode() + b"\n")
        self._replies.flush()
