"""Server-side commands: serve, submit, keys, db, and the implementation of `problems import`.

Registered by kernelgrade.cli when the `service` extra is installed. Heavy imports (FastAPI, SQLAlchemy,
httpx, torch) happen inside the handlers.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kernelgrade.config import Settings

if TYPE_CHECKING:
    from kernelgrade.client import Client
    from kernelgrade.service.schemas import EvaluationOut, ProgressOut, SubmissionOut
    from kernelgrade.storage.database import Database

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
# How often `submit --wait` asks for progress: live enough for a person, far below the default rate limit.
POLL_S = 1.0


def register(commands: Subparsers) -> None:
    serve = commands.add_parser("serve", help="run the API and the embedded worker pool")
    serve.add_argument("--host", default=None, help="bind address (default: settings, 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default: settings, 8000)")
    serve.set_defaults(handler=_serve)
    _register_worker(commands)
    _register_submit(commands)
    _register_keys(commands)
    db = commands.add_parser("db", help="database maintenance")
    db_sub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    db_sub.add_parser("upgrade", help="apply the schema migrations").set_defaults(handler=_db_upgrade)


def _register_worker(commands: Subparsers) -> None:
    worker = commands.add_parser("worker", help="grade jobs from the broker (KERNELGRADE_DISPATCH=celery)")
    worker.add_argument("--device-class", default=None,
                        help="the queue to serve, e.g. cuda-h100 (default: detected from this host's device)")
    worker.add_argument("--concurrency", type=int, default=None,
                        help="GPUs this worker grades on, with KERNELGRADE_JUDGES_PER_GPU judges each, or CPU"
                             " judges on a host without one (default: every visible GPU, or one CPU judge)")
    worker.set_defaults(handler=_worker)


def _register_submit(commands: Subparsers) -> None:
    submit = commands.add_parser("submit", help="send a submission to a running server")
    submit.add_argument("file", type=Path, help="the Python file defining ModelNew")
    submit.add_argument("--problem", required=True, help="problem name")
    submit.add_argument("--server", default=None, help="server URL (default: KERNELGRADE_SERVER_URL or host:port)")
    submit.add_argument("--model", default="", help="model or agent label for the leaderboards")
    submit.add_argument("--force", action="store_true", help="grade again even if this source was graded")
    submit.add_argument("--public", action="store_true", help="let everyone read the source")
    submit.add_argument("--wait", action="store_true", help="follow the grading and print the verdict")
    submit.add_argument("--json", action="store_true", help="print the final submission as JSON")
    submit.set_defaults(handler=_submit)


def _register_keys(commands: Subparsers) -> None:
    keys = commands.add_parser("keys", help="manage API keys (writes the database directly)")
    sub = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    create = sub.add_parser("create", help="create a key and print it once")
    create.add_argument("--name", required=True, help="the key's name; submissions are credited to it")
    create.add_argument("--role", choices=("admin", "submitter"), default="submitter")
    create.add_argument("--quota", type=int, default=None, help="submissions per day (default: settings)")
    create.add_argument("--rate", type=int, default=None, help="requests per minute (default: settings)")
    create.set_defaults(handler=_keys_create)
    sub.add_parser("list", help="list keys (names, roles, prefixes)").set_defaults(handler=_keys_list)
    revoke = sub.add_parser("revoke", help="revoke a key by name")
    revoke.add_argument("name")
    revoke.set_defaults(handler=_keys_revoke)


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of `kernelgrade problems import` (wired by cli/problem_commands.py)."""
    parser.add_argument("folder", type=Path, help="a folder of KernelBench-format problem files")
    parser.add_argument("--suite", default=None, help="suite name (default: the folder's name)")
    parser.set_defaults(handler=import_problems)


def import_problems(args: argparse.Namespace) -> int:
    """Import every problem file under a folder into the database; idempotent on content hash."""
    from kernelgrade.service.problem_catalog import import_folder

    database = _migrated_database(Settings.from_env())
    try:
        report = import_folder(database, args.folder, args.suite)
    except NotADirectoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        database.dispose()
    print(f"added {len(report.added)}, new versions {len(report.new_versions)}, unchanged {len(report.unchanged)},"
          f" errors {len(report.errors)}")
    for name in report.new_versions:
        print(f"  new version: {name}")
    for error in report.errors:
        print(f"  error: {error}", file=sys.stderr)
    return EXIT_FAILED if report.errors else EXIT_OK


def _migrated_database(settings: Settings) -> Database:
    from kernelgrade.storage.database import Database
    from kernelgrade.storage.migrate import upgrade

    database = Database.connect(settings.resolved_database_url)
    upgrade(database)
    return database


def _serve(args: argparse.Namespace) -> int:
    from kernelgrade.serve import run_server

    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    return run_server(Settings.from_env(**overrides))


def _worker(args: argparse.Namespace) -> int:
    from kernelgrade.worker.remote_worker import WorkerOptions, run_worker

    if args.concurrency is not None and args.concurrency < 1:
        print("--concurrency must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    return run_worker(Settings.from_env(dispatch="celery"), WorkerOptions(args.device_class, args.concurrency))


def _db_upgrade(_args: argparse.Namespace) -> int:
    from kernelgrade.storage.migrate import current_revision

    database = _migrated_database(Settings.from_env())
    print(f"database at revision {current_revision(database)}")
    database.dispose()
    return EXIT_OK


def _keys_create(args: argparse.Namespace) -> int:
    from kernelgrade.service.key_material import new_key
    from kernelgrade.storage.api_keys import KeyNameTaken, NewApiKey, add_key
    from kernelgrade.storage.records import Role

    material = new_key()
    database = _migrated_database(Settings.from_env())
    try:
        with database.session() as session:
            add_key(session, NewApiKey(args.name, Role(args.role), material.prefix, material.key_hash,
                                       args.quota, args.rate))
    except KeyNameTaken:
        print(f"error: a key named {args.name!r} exists; pick another name or revoke it first", file=sys.stderr)
        return EXIT_USAGE
    finally:
        database.dispose()
    print(material.key)
    print(f"created {args.role} key {args.name!r}; it is shown only this once", file=sys.stderr)
    return EXIT_OK


def _keys_list(_args: argparse.Namespace) -> int:
    from kernelgrade.storage.api_keys import list_keys

    database = _migrated_database(Settings.from_env())
    with database.session() as session:
        keys = list_keys(session)
    database.dispose()
    for key in keys:
        state = "revoked" if key.revoked_at else "active"
        print(f"{key.name:<24} {key.role.value:<10} {key.prefix}...  {state:<8} created {key.created_at:%Y-%m-%d}")
    return EXIT_OK


def _keys_revoke(args: argparse.Namespace) -> int:
    from kernelgrade.storage.api_keys import revoke_key

    database = _migrated_database(Settings.from_env())
    with database.session() as session:
        revoked = revoke_key(session, args.name)
    database.dispose()
    print(f"revoked {args.name!r}" if revoked else f"no active key named {args.name!r}")
    return EXIT_OK if revoked else EXIT_USAGE


def _submit(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from kernelgrade.client import ApiError, Client, ServerUnreachable

    settings = Settings.from_env()
    try:
        source = args.file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {args.file}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    server = (args.server or settings.resolved_server_url).rstrip("/")
    try:
        with Client(server, settings.api_key) as client:
            return _submit_and_follow(client, args, source, server)
    except ApiError as exc:
        print(f"error: {exc.message} [{exc.code}]", file=sys.stderr)
        return EXIT_USAGE
    except ServerUnreachable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValidationError as exc:  # refused before sending, by the same schema the server checks
        first = exc.errors()[0]
        print(f"error: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}", file=sys.stderr)
        return EXIT_USAGE


def _submit_and_follow(client: Client, args: argparse.Namespace, source: str, server: str) -> int:
    from kernelgrade.cli.eval_command import exit_code
    from kernelgrade.client import SubmissionIn

    submission = client.submit(SubmissionIn(problem=args.problem, source=source, model=args.model,
                                            force=args.force, public=args.public))
    note = " (identical to an earlier submission; add --force to grade again)" if submission.duplicate else ""
    print(f"submission {submission.id} for {submission.problem}: {server}/v1/submissions/{submission.id}{note}",
          file=sys.stderr)
    for warning in submission.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not args.wait:
        if args.json:
            print(submission.model_dump_json(indent=2))
        return EXIT_OK
    submission, evaluation = _follow(client, submission)
    print(submission.model_dump_json(indent=2) if args.json else _verdict_summary(evaluation))
    return exit_code(str(evaluation.verdict), evaluation.speedup, None)


def _follow(client: Client, submission: SubmissionOut) -> tuple[SubmissionOut, EvaluationOut]:
    """Poll until graded: the submission as last read, and its finished evaluation."""
    from kernelgrade.cli.eval_command import ProgressLine

    show = ProgressLine(sys.stderr)
    while (evaluation := submission.evaluation) is None or evaluation.status != "done":
        show(_progress_shown(evaluation))
        time.sleep(POLL_S)
        submission = client.get(submission.id)
    return submission, evaluation


def _progress_shown(evaluation: EvaluationOut | None) -> ProgressOut:
    from kernelgrade.service.schemas import ProgressOut

    if evaluation is None or evaluation.status == "queued":
        ahead = evaluation.queue_position if evaluation is not None else None
        return ProgressOut(stage="queued", message=f"{ahead} job(s) ahead" if ahead else "waiting for a judge",
                           done=0, total=0)
    return evaluation.progress or ProgressOut(stage=evaluation.status, message="", done=0, total=0)


def _verdict_summary(evaluation: EvaluationOut) -> str:
    lines = [f"verdict     {str(evaluation.verdict).upper()}"]
    if evaluation.speedup is not None:
        lines.append(f"speedup     {evaluation.speedup:.3f}x (reference {_ms(evaluation.reference_median_ms)},"
                     f" candidate {_ms(evaluation.candidate_median_ms)})")
    failure = evaluation.failure
    if failure:
        lines.append(f"reason      [{failure.stage}/{failure.code}] {failure.message}")
    lines.append(f"attempts    {evaluation.attempts}  device {evaluation.device_class}")
    if evaluation.environment and evaluation.environment.warning:
        lines.append(f"warning     {evaluation.environment.warning}")
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f} ms"

