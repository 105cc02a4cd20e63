"""Settings: defaults, every KERNELGRADE_* variable parsed, bad values refused with what is accepted,
overrides on top of the environment, and the spellings of on and off."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kernelgrade.config import OFF_WORDS, ON_WORDS, Settings, SettingsError

HOME = Path.home()

# Every field: a value as an operator writes it, and what the settings hold for it (none of them a default).
PARSED: dict[str, tuple[str, Any]] = {
    "data_dir": ("~/kg-data", HOME / "kg-data"),
    "work_dir": ("/dev/shm/kg-work", Path("/dev/shm/kg-work")),
    "database_url": ("postgresql+psycopg://kg@db/kg", "postgresql+psycopg://kg@db/kg"),
    "host": ("0.0.0.0", "0.0.0.0"),
    "port": ("8123", 8123),
    "seed_secret": ("s3cret", "s3cret"),
    "sandbox": ("unshare", "unshare"),
    "sandbox_minimum": ("bwrap", "bwrap"),
    "allow_unsandboxed": ("yes", True),
    "dispatch": ("celery", "celery"),
    "broker_url": ("amqp://guest@mq//", "amqp://guest@mq//"),
    "queue_prefix": ("staging-", "staging-"),
    "compile_jobs": ("2", 2),
    "compile_workers": ("5", 5),
    "measure_cores": ("0", 0),
    "precompiled_headers": ("off", False),
    "lean_cuda_header": ("0", False),
    "max_attempts": ("7", 7),
    "lease_seconds": ("12.5", 12.5),
    "open_mode": ("false", "off"),
    "admin_key": ("kg_admin", "kg_admin"),
    "rate_limit_per_minute": ("0", 0),
    "quota_per_day": ("10", 10),
    "max_source_bytes": ("1024", 1024),
    "max_request_bytes": ("4096", 4096),
    "max_batch": ("3", 3),
    "log_level": ("DEBUG", "debug"),
    "timing_profile": ("fast", "fast"),
    "compiled_baseline": ("On", "on"),
    "compiled_baseline_max_age_hours": ("1.5", 1.5),
    "prepare_problems": ("no", False),
    "stored_reference_timing": ("off", False),
    "interleaved_timing": ("Off", "off"),
    "judge_processes": ("ON", "on"),
    "local_judges": ("0", 0),
    "judges_per_gpu": ("2", 2),
    "warm_children": ("1", 1),
    "host_lock": ("~/kg.lock", HOME / "kg.lock"),
    "poll_seconds": ("0.25", 0.25),
    "server_url": ("http://grader:9000/", "http://grader:9000/"),
    "api_key": ("kg_key", "kg_key"),
    "resend_queued_seconds": ("30", 30.0),
}

# A refused value of each field that can refuse one, and the message's part after the variable and value.
REFUSED: dict[str, tuple[str, str]] = {
    "port": ("70000", "use a whole number from 1 to 65535"),
    "sandbox": ("docker", "use auto, bwrap, unshare or none"),
    "sandbox_minimum": ("auto", "use none, unshare or bwrap"),
    "allow_unsandboxed": ("maybe", "use on or off (also 1, true, yes / 0, false, no)"),
    "dispatch": ("kafka", "use local or celery"),
    "compile_jobs": ("0", "use a whole number of at least 1"),
    "compile_workers": ("-1", "use a whole number of at least 0"),
    "measure_cores": ("-2", "use a whole number of at least -1"),
    "precompiled_headers": ("enabled", "use on or off (also 1, true, yes / 0, false, no)"),
    "lean_cuda_header": ("2", "use on or off (also 1, true, yes / 0, false, no)"),
    "max_attempts": ("many", "use a whole number of at least 1"),
    "lease_seconds": ("0", "use a number above 0"),
    "open_mode": ("sometimes", "use auto, on or off (also 1, true, yes / 0, false, no)"),
    "rate_limit_per_minute": ("-5", "use a whole number of at least 0"),
    "quota_per_day": ("1.5", "use a whole number of at least 0"),
    "max_source_bytes": ("0", "use a whole number of at least 1"),
    "max_request_bytes": ("lots", "use a whole number of at least 1"),
    "max_batch": ("0", "use a whole number of at least 1"),
    "log_level": ("verbose", "use debug, info, warning, error or critical"),
    "timing_profile": ("quick", "use standard or fast"),
    "compiled_baseline": ("maybe", "use auto, on or off (also 1, true, yes / 0, false, no)"),
    "compiled_baseline_max_age_hours": ("-1", "use a number of at least 0"),
    "prepare_problems": ("later", "use on or off (also 1, true, yes / 0, false, no)"),
    "stored_reference_timing": ("sometimes", "use on or off (also 1, true, yes / 0, false, no)"),
    "interleaved_timing": ("often", "use auto, on or off (also 1, true, yes / 0, false, no)"),
    "judge_processes": ("threads", "use auto, on or off (also 1, true, yes / 0, false, no)"),
    "local_judges": ("-2", "use a whole number of at least -1"),
    "judges_per_gpu": ("5", "use a whole number from 1 to 4"),
    "warm_children": ("-1", "use a whole number of at least 0"),
    "poll_seconds": ("0", "use a number above 0"),
    "resend_queued_seconds": ("soon", "use a number above 0"),
}


def variable(name: str) -> str:
    return "KERNELGRADE_" + name.upper()


def test_the_tables_cover_every_setting() -> None:
    assert set(PARSED) == set(Settings.model_fields)
    free_text = {"data_dir", "work_dir", "host_lock", "database_url", "host", "seed_secret", "broker_url",
                 "queue_prefix", "admin_key", "server_url", "api_key"}
    assert set(REFUSED) == set(Settings.model_fields) - free_text


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert settings == Settings()
    assert settings.data_dir == HOME / ".local" / "share" / "kernelgrade"
    assert settings.host_lock == Path(tempfile.gettempdir()) / "kernelgrade-cpu-measure.lock"
    assert (settings.host, settings.port, settings.dispatch, settings.sandbox) == ("127.0.0.1", 8000, "local", "auto")
    assert (settings.open_mode, settings.compiled_baseline, settings.log_level) == ("auto", "auto", "info")
    assert settings.judge_processes == "auto"
    assert settings.precompiled_headers and settings.lean_cuda_header and not settings.allow_unsandboxed
    assert (settings.compile_jobs, settings.max_attempts, settings.local_judges) == (4, 3, -1)
    assert (settings.warm_children, settings.lease_seconds, settings.poll_seconds) == (8, 60.0, 2.0)
    assert settings.cache_dir == settings.data_dir / "cache" and settings.work_root == settings.data_dir / "work"
    assert Settings(work_dir=Path("/dev/shm/kg")).work_root == Path("/dev/shm/kg")
    assert settings.resolved_database_url == f"sqlite:///{settings.data_dir / 'kernelgrade.db'}"
    assert settings.resolved_server_url == "http://127.0.0.1:8000"
    assert settings.is_open and settings.measures_compiled_baseline


@pytest.mark.parametrize("name", sorted(PARSED))
def test_each_variable_is_parsed(name: str) -> None:
    raw, expected = PARSED[name]
    settings = Settings.from_env({variable(name): raw})
    assert getattr(settings, name) == expected
    assert getattr(settings, name) != getattr(Settings(), name), "the table should pick a value that is no default"


def test_all_variables_at_once_and_the_derived_values() -> None:
    settings = Settings.from_env({variable(name): raw for name, (raw, _) in PARSED.items()})
    assert {name: getattr(settings, name) for name in PARSED} == {name: value for name, (_, value) in PARSED.items()}
    assert settings.resolved_database_url == "postgresql+psycopg://kg@db/kg"
    assert settings.resolved_server_url == "http://grader:9000"
    assert not settings.is_open and settings.measures_compiled_baseline


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_bad_value_is_refused_naming_the_variable_value_and_choices(name: str) -> None:
    raw, accepted = REFUSED[name]
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({variable(name): raw})
    assert str(refused.value) == f"{variable(name)}={raw!r}: {accepted}"


def test_every_bad_value_is_named_at_once() -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"KERNELGRADE_DISPATCH": "kafka", "KERNELGRADE_PORT": "http", "KERNELGRADE_HOST": "::"})
    assert str(refused.value) == ("KERNELGRADE_PORT='http': use a whole number from 1 to 65535;"
                                  " KERNELGRADE_DISPATCH='kafka': use local or celery")


@pytest.mark.parametrize("word", ON_WORDS + tuple(w.upper() for w in ON_WORDS) + (" on ",))
def test_the_spellings_of_on(word: str) -> None:
    names = ("allow_unsandboxed", "precompiled_headers", "lean_cuda_header", "open_mode", "compiled_baseline")
    settings = Settings.from_env({variable(name): word for name in names}, host="0.0.0.0", timing_profile="fast")
    assert settings.allow_unsandboxed is settings.precompiled_headers is settings.lean_cuda_header is True
    assert (settings.open_mode, settings.compiled_baseline) == ("on", "on")
    assert settings.is_open and settings.measures_compiled_baseline


@pytest.mark.parametrize("word", OFF_WORDS + tuple(w.capitalize() for w in OFF_WORDS))
def test_the_spellings_of_off(word: str) -> None:
    names = ("allow_unsandboxed", "precompiled_headers", "lean_cuda_header", "open_mode", "compiled_baseline")
    settings = Settings.from_env({variable(name): word for name in names})
    assert settings.allow_unsandboxed is settings.precompiled_headers is settings.lean_cuda_header is False
    assert (settings.open_mode, settings.compiled_baseline) == ("off", "off")
    assert not settings.is_open and not settings.measures_compiled_baseline


@pytest.mark.parametrize("word", ["t", "y", "enabled", "none"])
def test_other_spellings_are_refused(word: str) -> None:
    with pytest.raises(SettingsError, match="KERNELGRADE_LEAN_CUDA_HEADER"):
        Settings.from_env({"KERNELGRADE_LEAN_CUDA_HEADER": word})
    with pytest.raises(SettingsError, match="KERNELGRADE_OPEN_MODE"):
        Settings.from_env({"KERNELGRADE_OPEN_MODE": word})


@pytest.mark.parametrize(("host", "open_mode", "is_open"), [
    ("127.0.0.1", "auto", True), ("localhost", "auto", True), ("::1", "auto", True), ("0.0.0.0", "auto", False),
    ("0.0.0.0", "on", True), ("127.0.0.1", "off", False),
])
def test_open_mode_auto_follows_the_bind_address(host: str, open_mode: str, is_open: bool) -> None:
    assert Settings.from_env({"KERNELGRADE_HOST": host, "KERNELGRADE_OPEN_MODE": open_mode}).is_open is is_open


def test_an_empty_variable_keeps_the_default() -> None:
    blank = {variable(name): "" for name in PARSED}
    assert Settings.from_env(blank) == Settings()


def test_overrides_win_over_the_environment_and_are_named_as_given() -> None:
    settings = Settings.from_env({"KERNELGRADE_PORT": "9000", "KERNELGRADE_DISPATCH": "local"}, port=9001,
                                 dispatch="celery")
    assert (settings.port, settings.dispatch) == (9001, "celery")
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"KERNELGRADE_PORT": "9000"}, port=0, queue_size=3)
    assert str(refused.value) == "port=0: use a whole number from 1 to 65535; queue_size: not a setting"


def test_from_env_reads_the_process_environment_and_the_constructor_does_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELGRADE_PORT", "8765")
    monkeypatch.setenv("KERNELGRADE_TIMING_PROFILE", "fast")
    assert (Settings.from_env().port, Settings.from_env().timing_profile) == (8765, "fast")
    assert Settings.from_env({}).port == 8000
    assert Settings().port == 8000 and Settings(port=8001).port == 8001


def test_settings_are_frozen_and_a_copy_is_validated() -> None:
    settings = Settings(port=8001)
    with pytest.raises(ValidationError, match="frozen"):
        settings.port = 8002
    assert settings.replace(compile_jobs=2) == Settings(port=8001, compile_jobs=2)
    assert settings.replace(data_dir="~/elsewhere").data_dir == HOME / "elsewhere"
    with pytest.raises(ValidationError):
        settings.replace(dispatch="kafka")
