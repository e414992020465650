"""The official ACP TypeScript SDK, from npm, for the gateway's tests: its
JSON schema (every message agentrio sends is checked against it) and its
client (``ts_sdk/client.mjs`` drives ``agentrio acp`` with it).

The package is installed once per version into a cache directory
(``$AGENTRIO_TEST_CACHE``, else ``~/.cache/agentrio-tests``), keyed by the
lock file, with ``npm ci``. Without npm or the registry the tests that need
it skip and say why, except in CI (``CI`` set), where they fail.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

HERE = Path(__file__).resolve().parent / "ts_sdk"
SDK = Path("node_modules/@agentclientprotocol/sdk")
#: Seconds ``npm ci`` may take.
INSTALL_TIMEOUT = 300


class Unavailable(Exception):
    """npm, or the package, cannot be had here."""


def _cache_root() -> Path:
    given = os.environ.get("AGENTRIO_TEST_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "agentrio-tests"


#: Why the package could not be had, once it failed: not tried again in this run.
_failed: Unavailable | None = None


def install() -> Path:
    """The directory holding ``node_modules`` with the pinned SDK and the
    scripts of ``ts_sdk/`` (copied anew each test run); ``Unavailable``
    if npm or its registry cannot be reached (tried once per test run)."""
    global _failed
    if _failed is not None:
        raise _failed
    try:
        return _install()
    except Unavailable as exc:
        _failed = exc
        raise


@functools.cache
def _install() -> Path:
    lock = (HERE / "package-lock.json").read_bytes()
    target = _cache_root() / f"ts_sdk-{hashlib.sha256(lock).hexdigest()[:16]}"
    if not (target / SDK / "package.json").is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise Unavailable("npm is not installed (.ci/run installs it)")
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="ts_sdk-", dir=target.parent))
        for name in ("package.json", "package-lock.json"):
            shutil.copy(HERE / name, staging / name)
        try:
            done = subprocess.run(
                [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
                check=False,
                cwd=staging,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            raise Unavailable(
                f"npm ci took more than {INSTALL_TIMEOUT} s: is the registry reachable?"
            ) from None
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            tail = " ".join(done.stderr.strip().splitlines()[-3:])
            raise Unavailable(f"npm ci failed (is the registry reachable?): {tail}")
        try:
            staging.rename(target)
        except OSError:  # another run installed it meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    for script in HERE.glob("*.mjs"):
        shutil.copy(script, target / script.name)
    return target


def need(what: str) -> Path:
    """``install()``, or skip the test saying why (fail it in CI)."""
    try:
        return install()
    except Unavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI must test {what}: {exc}", pytrace=False)
        pytest.skip(f"{what} needs the ACP SDK from npm: {exc}")


class OfficialSchema:
    """ACP v1's JSON schema as the SDK ships it (``schema.json``, and
    ``schema.unstable.json`` for the methods only it has), used to check
    each message an agent sends, knowing which request a response answers."""

    def __init__(self, sdk: Path) -> None:
        self.stable = json.loads((sdk / "schema/v1/schema.json").read_text())
        self.unstable = json.loads((sdk / "schema/v1/schema.unstable.json").read_text())
        self._validators: dict[tuple[int, str], jsonschema.protocols.Validator] = {}

    def _definition(self, method: str, suffix: str, side: str) -> tuple[dict[str, Any], str] | None:
        """(schema, definition name) of ``method``'s ``suffix`` (Request,
        Response, Notification) sent by ``side``'s peer: the stable one if any."""
        for schema in (self.stable, self.unstable):
            for name, definition in schema["$defs"].items():
                if (
                    definition.get("x-method") == method
                    and definition.get("x-side") == side
                    and name.endswith(suffix)
                ):
                    return schema, name
        return None

    def _validate(self, schema: dict[str, Any], name: str, value: Any) -> None:
        key = (id(schema), name)
        if (validator := self._validators.get(key)) is None:
            validator = self._validators[key] = jsonschema.Draft202012Validator(
                {"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]}
            )
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        assert not errors, f"{name} does not conform: {errors[0].message} at {list(errors[0].absolute_path)}"

    def check(self, message: dict[str, Any], answers: str | None = None) -> None:
        """``message``, sent by the agent, conforms; ``answers``: the method
        of the client's request it responds to. Extension methods (``_``)
        and their answers are only checked as JSON-RPC."""
        assert message.get("jsonrpc") == "2.0", message
        if "method" in message:
            method = message["method"]
            if method.startswith("_"):
                return
            kind = "Request" if "id" in message else "Notification"
            found = self._definition(method, kind, "client")
            assert found is not None, f"the agent sent {method!r}, which ACP's schema does not have"
            self._validate(*found, message.get("params"))
        elif "error" in message:
            self._validate(self.stable, "Error", message["error"])
        else:
            assert answers is not None, f"a response to no request: {message}"
            if answers.startswith("_"):
                return
            found = self._definition(answers, "Response", "agent")
            assert found is not None, f"ACP's schema has no response to {answers!r}"
            self._validate(*found, message.get("result"))


@functools.cache
def _schema(sdk: Path) -> OfficialSchema:
    return OfficialSchema(sdk / SDK)


def official_schema(*, required: bool = True) -> OfficialSchema | None:
    """The official schema; when it cannot be had, None if not ``required``,
    else the test skips (fails in CI)."""
    if not required:
        try:
            return _schema(install())
        except Unavailable:
            return None
    return _schema(need("conformance to the official ACP schema"))


def run_ts_client(
    scenario: str, agent_command: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 60
) -> dict[str, Any]:
    """Run ``ts_sdk/client.mjs`` with ``scenario`` (a ``ts_sdk/*.mjs`` file)
    against ``agent_command``; every message agentrio sent is checked
    against the official schema. Returns what the scenario returned
    (``result``), the updates the client received (``updates``) and the
    transcript (``transcript``: ``{"from": "agent"|"client", "message"}``),
    also kept as ``SCENARIO.jsonl`` in ``$AGENTRIO_ACP_TRANSCRIPTS`` when set."""
    sdk = need("the TypeScript SDK's client")
    node = shutil.which("node")
    if node is None:
        pytest.fail("npm is installed but node is not", pytrace=False)
    with tempfile.TemporaryDirectory() as tmp:
        transcript_path = Path(tmp) / "transcript.jsonl"
        done = subprocess.run(
            [node, str(sdk / "client.mjs"), str(sdk / scenario), str(transcript_path), "--", *agent_command],
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=cwd,
        )
        transcript = [json.loads(line) for line in transcript_path.read_text().splitlines() if line]
        if keep := os.environ.get("AGENTRIO_ACP_TRANSCRIPTS"):
            # Where to keep each scenario's transcript, to read or show (an editor session, message by message).
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(transcript_path, Path(keep) / f"{Path(scenario).stem}.jsonl")
    sys.stderr.write(done.stderr)
    lines = done.stdout.strip().splitlines()
    assert lines, f"the TypeScript client printed nothing (exit {done.returncode}): {done.stderr[-2000:]}"
    report = json.loads(lines[-1])
    assert done.returncode == 0 and not report["errors"], (report["errors"], done.stderr[-2000:])
    schema = _schema(sdk)
    methods: dict[Any, str] = {}
    for entry in transcript:
        message = entry["message"]
        if entry["from"] == "client":
            if "method" in message and "id" in message:
                methods[message["id"]] = message["method"]
        else:
            schema.check(message, methods.get(message.get("id")) if "method" not in message else None)
    report["transcript"] = transcript
    return report
