"""Where an agent command's settings come from, and the errors a person sees."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentrio.cli import build_parser, main
from agentrio.cli.config import Config
from agentrio.cli.options import Settings
from agentrio.models import OpenAIChat

from .conftest import ROOT


def settings(*argv: str, environ: dict | None = None) -> Settings:
    return Settings.load(build_parser().parse_args(list(argv)), environ or {})


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for variable in ("AGENTRIO_MODEL", "AGENTRIO_DB", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def test_global_options_work_before_or_after_the_command_and_the_later_one_wins():
    assert settings("--db", "a.db", "--model", "openai:m1", "run", "hi").db == "a.db"
    assert settings("run", "hi", "--db", "b.db").db == "b.db"
    assert settings("--db", "a.db", "run", "hi", "--db", "b.db").db == "b.db"
    assert settings("--model", "openai:m1", "chat").model_name == "openai:m1"
    assert settings("--model", "openai:m1", "chat", "--model", "openai:m2").model_name == "openai:m2"


def test_the_command_line_beats_the_environment_which_beats_agentrio_toml(tmp_path):
    (tmp_path / "agentrio.toml").write_text(
        'model = "openai:from-file"\ndb = "file.db"\npermission = "read-only"\nmax_turns = 7\n'
    )
    assert settings("run", "hi").model_name == "openai:from-file"
    assert settings("run", "hi").permission == "read-only" and settings("run", "hi").max_turns == 7
    environ = {"AGENTRIO_MODEL": "openai:from-env", "AGENTRIO_DB": "env.db"}
    assert settings("run", "hi", environ=environ).model_name == "openai:from-env"
    assert settings("run", "hi", environ=environ).db == "env.db"
    given = settings("run", "hi", "--model", "openai:given", "--permission", "allow", environ=environ)
    assert (given.model_name, given.permission) == ("openai:given", "allow")


def test_a_local_server_needs_no_api_key_but_a_provider_does(monkeypatch):
    model = settings("run", "hi", "--model", "openai:llama", "--base-url", "http://127.0.0.1:1/v1").model()
    assert (
        isinstance(model, OpenAIChat) and model.api_key is None and model.base_url == "http://127.0.0.1:1/v1"
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert settings("run", "hi", "--model", "openai:gpt-4.1").model().api_key == "sk-test"


@pytest.mark.parametrize(
    ("config", "argv", "status", "error"),
    [
        ("", ["run", "hi"], 1, "no model: give --model provider:model"),
        ("", ["run", "hi", "--model", "openai:gpt-4.1"], 1, "OPENAI_API_KEY is not set"),
        ("", ["run", "hi", "--model", "gpt-4.1"], 1, "expected 'provider:model'"),
        ("", ["run", "hi", "--model", "openai:m", "--cwd", "nowhere"], 2, "not a directory"),
        ('modle = "x"\n', ["run", "hi"], 2, "agentrio.toml: unknown setting 'modle'"),
        ("model = [\n", ["run", "hi"], 2, "agentrio.toml"),
        ("max_turns = 0\n", ["run", "hi"], 2, "max_turns must be a positive whole number"),
        ("cwd = 3\n", ["run", "hi", "--model", "openai:m"], 2, "agentrio.toml: cwd must be a string, got 3"),
        ("max_turns = true\n", ["run", "hi"], 2, "agentrio.toml: max_turns must be a whole number, got True"),
        ('system_prompt = ["be brief"]\n', ["run", "hi"], 2, "agentrio.toml: system_prompt must be a string"),
        ("db = 7\n", ["sessions", "list"], 2, "agentrio.toml: db must be a string, got 7"),
        ('permission = "maybe"\n', ["serve"], 2, "permission must be one of"),
    ],
)
def test_mistakes_are_one_line_errors(tmp_path, capsys, config, argv, status, error):
    if config:
        (tmp_path / "agentrio.toml").write_text(config)
    assert main(argv) == status
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("agentrio: error: ") and error in err and err.count("\n") == 1


def test_settings_come_in_layers_user_file_project_file_found_upward_environment_flags(tmp_path, monkeypatch):
    user = tmp_path / "config" / "agentrio" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('model = "openai:user"\nmax_turns = 5\npermission = "read-only"\n')
    project = tmp_path / "project"
    (project / "src" / "deep").mkdir(parents=True)
    (project / "agentrio.toml").write_text('model = "openai:project"\ndb = "store.db"\n')
    monkeypatch.chdir(project / "src" / "deep")
    config = Config.load(build_parser().parse_args(["run", "hi"]), {})
    assert (config["model"], config["max_turns"], config["permission"]) == ("openai:project", 5, "read-only")
    # A path a file sets is relative to that file.
    assert config["db"] == str(project / "store.db")
    assert config.values["model"].origin == str(project / "agentrio.toml")
    assert config.values["max_turns"].origin == str(user)
    environ = {"AGENTRIO_MODEL": "openai:env"}
    config = Config.load(build_parser().parse_args(["run", "hi", "--permission", "allow"]), environ)
    assert (config["model"], config.values["model"].origin) == ("openai:env", "$AGENTRIO_MODEL")
    assert (config["permission"], config.values["permission"].origin) == ("allow", "--permission")


def test_every_command_uses_one_default_store_in_the_user_data_directory(tmp_path):
    default = str(tmp_path / "data" / "agentrio" / "sessions.db")
    for argv in (["run", "hi"], ["chat"], ["sessions", "list"], ["serve"], ["acp"], ["config"]):
        assert Config.load(build_parser().parse_args(argv), {})["db"] == default
    assert Config.load(build_parser().parse_args(["acp"]), {"AGENTRIO_DB": "x.db"})["db"] == "x.db"


def test_version_and_sessions_with_the_global_db(tmp_path):
    version = subprocess.run(
        [sys.executable, "-m", "agentrio", "--version"],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert version.returncode == 0 and version.stdout.startswith("agentrio ")
    missing = tmp_path / "missing.db"
    assert main(["--db", str(missing), "sessions", "list"]) == 1
    assert not missing.exists()


def test_chat_without_a_terminal_says_to_use_run(capsys, monkeypatch):
    with open("/dev/null") as null:
        monkeypatch.setattr(sys, "stdin", null)
        assert main(["chat", "--model", "openai:m", "--base-url", "http://127.0.0.1:1/v1"]) == 1
    assert "chat needs a terminal" in capsys.readouterr().err


def test_help_is_plain_text_and_chat_lists_its_slash_commands(capsys):
    for command in ("run", "chat", "sessions"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = capsys.readouterr().out
        assert "``" not in out and f"agentrio {command}" in out
        if command == "chat":
            slashes = ("/help", "/sessions", "/resume ID", "/fork N", "/usage", "/model", "/clear", "/quit")
            assert all(f"\n  {slash}" in out for slash in slashes)


async def test_what_the_library_logs_during_a_command_goes_to_a_file_beside_the_database(tmp_path, capsys):
    import logging

    from agentrio.cli.session import open_runtime

    settings = Settings.load(build_parser().parse_args(["--db", str(tmp_path / "s.db"), "run", "x"]))
    logger = logging.getLogger("agentrio")
    async with open_runtime(settings):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logging.getLogger("agentrio.actors").exception("agent a: run failed")
    # Not drawn over the transcript (Python's last-resort handler prints to stderr)...
    assert capsys.readouterr().err == ""
    # ...but kept, traceback and all, beside the session database.
    text = (tmp_path / "s.db.log").read_text()
    assert "ERROR agentrio.actors: agent a: run failed" in text and "RuntimeError: boom" in text
    assert logger.handlers == [] and logger.propagate  # as it was before the command
