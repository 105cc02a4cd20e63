"""The `kernelgrade` command line: parses arguments and calls into the packages.

Each command module registers its subcommands; heavy imports (torch, FastAPI, SQLAlchemy) happen only
inside the command that needs them, so `kernelgrade eval` runs where only torch and pydantic-settings (the
settings) are installed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kernelgrade import __version__
from kernelgrade.cli import eval_command, problem_commands
from kernelgrade.cli.eval_command import EXIT_USAGE
from kernelgrade.config import SettingsError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kernelgrade", description="Grade model-written GPU kernels.")
    parser.add_argument("--version", action="version", version=f"kernelgrade {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    eval_command.register(commands)
    problem_commands.register(commands)
    _register_service_commands(commands)
    return parser


def _register_service_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The server-side commands need the `service` extra; without it they are simply absent."""
    import importlib

    try:
        service_commands = importlib.import_module("kernelgrade.cli.service_commands")
    except ImportError:
        return
    service_commands.register(commands)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except SettingsError as exc:  # a usage error, whichever command read the settings
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return code


if __name__ == "__main__":
    sys.exit(main())
