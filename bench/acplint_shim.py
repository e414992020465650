"""A stdio proxy that translates acplint 0.1.0's own wire bugs, so that what
it reports is about the agent.

    python bench/acplint_shim.py AGENT_COMMAND...

With ``$ACPLINT_SHIM_LOG`` set to a file, each message is also appended
there, as it reaches its side (a JSON line ``[direction, message]``).

acplint starts this as its "agent"; the proxy starts ``AGENT_COMMAND`` and
passes every JSON-RPC line through, changing only what acplint gets wrong
against the ACP v1 schema (each change below names the bug). The agent's
stderr is passed through as is.

acplint to the agent (its requests and answers):

- C1: ``initialize`` sends ``protocolVersion`` as the string ``"1"``; the
  schema's ``ProtocolVersion`` is an integer. Sent as ``1``.
- C2: ``session/prompt`` puts the prompt under ``content``; the schema's
  field is ``prompt``. Renamed.
- C3: its answer to ``session/request_permission`` is
  ``{"outcome": {"optionId": …, "optionKind": "allow"}}``; the schema's
  selected outcome is ``{"outcome": "selected", "optionId": …}``. Rewritten
  (the option acplint chose is kept).
- C4: ``session/set_config_option`` names the option ``optionId``; the
  schema's field is ``configId``. Renamed (its ``value``, ``true`` where the
  schema has a value id, a string, is left for the agent to refuse).

The agent to acplint (acplint's models of the agent's messages):

- A1: it expects ``protocolVersion`` ``"1"`` (a string) in the
  ``initialize`` result, and fails an integer. Sent as ``"1"``.
- A2: it expects ``sessionUpdate`` kinds in camelCase (``agentMessageChunk``,
  ``toolCall``, ...); the schema's are snake_case (``agent_message_chunk``,
  ``tool_call``, ...). Renamed.
- A3: it reads a ``plan`` update's entries from ``update.plan.entries``; the
  schema puts them at ``update.entries``. Copied there too.
- A4: it requires ``description`` and options with ``id``/``label`` in
  ``session/request_permission``; the schema has ``toolCall`` and options
  with ``optionId``/``name``/``kind``. ``description`` is the tool call's
  title, ``id``/``label`` copies of ``optionId``/``name``.
- A5: it requires a ``label`` on each config option (``configOptions`` of
  session results and ``config_option_update``); the schema calls it
  ``name``. Copied.

Everything else goes through unchanged.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import trio

Message = dict[str, Any]


def camel(kind: str) -> str:
    """``agent_message_chunk`` -> ``agentMessageChunk`` (A2)."""
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), kind)


def _label_options(options: Any) -> None:
    """A5: each config option also under acplint's ``label``."""
    if isinstance(options, list):
        for option in options:
            if isinstance(option, dict) and "name" in option:
                option.setdefault("label", option["name"])


class Translator:
    """Both directions of one connection; it remembers the method of each of
    acplint's requests, to know what a response answers."""

    def __init__(self) -> None:
        self.client_methods: dict[Any, str] = {}
        self.agent_methods: dict[Any, str] = {}

    def from_client(self, message: Message) -> Message:
        method = message.get("method")
        params = message.get("params")
        if method is not None and "id" in message:
            self.client_methods[message["id"]] = method
        if method == "initialize" and isinstance(params, dict) and params.get("protocolVersion") == "1":
            params["protocolVersion"] = 1  # C1
        elif method == "session/prompt" and isinstance(params, dict) and "content" in params:
            params.setdefault("prompt", params.pop("content"))  # C2
        elif method == "session/set_config_option" and isinstance(params, dict) and "optionId" in params:
            params.setdefault("configId", params.pop("optionId"))  # C4
        elif (
            method is None and self.agent_methods.pop(message.get("id"), None) == "session/request_permission"
        ):
            outcome = message.get("result", {}).get("outcome")
            if isinstance(outcome, dict) and "outcome" not in outcome and "optionId" in outcome:
                message["result"]["outcome"] = {"outcome": "selected", "optionId": outcome["optionId"]}  # C3
        return message

    def from_agent(self, message: Message) -> Message:
        method = message.get("method")
        params = message.get("params")
        if method is not None and "id" in message:
            self.agent_methods[message["id"]] = method
        if method is None and "id" in message:
            answered = self.client_methods.pop(message["id"], None)
            result = message.get("result")
            if isinstance(result, dict):
                if answered == "initialize" and result.get("protocolVersion") == 1:
                    result["protocolVersion"] = "1"  # A1
                _label_options(result.get("configOptions"))  # A5
        elif method == "session/update" and isinstance(params, dict):
            update = params.get("update")
            if isinstance(update, dict) and isinstance(update.get("sessionUpdate"), str):
                if update["sessionUpdate"] == "plan" and "entries" in update:
                    update.setdefault("plan", {"entries": update["entries"]})  # A3
                _label_options(update.get("configOptions"))  # A5
                update["sessionUpdate"] = camel(update["sessionUpdate"])  # A2
        elif method == "session/request_permission" and isinstance(params, dict):
            tool_call = params.get("toolCall")
            title = tool_call.get("title") if isinstance(tool_call, dict) else None
            params.setdefault("description", title or "")  # A4
            for option in params.get("options", []):
                if isinstance(option, dict):
                    option.setdefault("id", option.get("optionId"))
                    option.setdefault("label", option.get("name"))
        return message


async def lines(stream: trio.abc.ReceiveStream) -> AsyncIterator[bytes]:
    """The stream's lines, without their newline; the last one even unended."""
    pending = b""
    while chunk := await stream.receive_some(65536):
        *complete, pending = (pending + chunk).split(b"\n")
        for line in complete:
            yield line
    if pending:
        yield pending


async def pump(
    source: trio.abc.ReceiveStream,
    sink: trio.abc.SendStream,
    translate: Callable[[Message], Message],
    log: Callable[[Message], None],
) -> None:
    """Copy lines from ``source`` to ``sink``, translating (and logging) those
    that are JSON objects."""
    async for line in lines(source):
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict):
            message = translate(message)
            log(message)
            line = json.dumps(message, separators=(",", ":")).encode()
        await sink.send_all(line + b"\n")


def logger(direction: str) -> Callable[[Message], None]:
    """Appends to ``$ACPLINT_SHIM_LOG``, if set, each message going ``direction``."""
    path = os.environ.get("ACPLINT_SHIM_LOG")

    def log(message: Message) -> None:
        if path:
            with open(path, "a") as file:
                file.write(json.dumps([direction, message]) + "\n")

    return log


async def main(command: list[str]) -> int:
    translator = Translator()
    stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
    stdout = trio.lowlevel.FdStream(os.dup(sys.stdout.fileno()))
    async with trio.open_nursery() as nursery:
        process = await trio.lowlevel.open_process(command, stdin=-1, stdout=-1)
        agent_in, agent_out = process.stdin, process.stdout
        assert agent_in is not None and agent_out is not None

        async def to_agent() -> None:
            try:
                await pump(stdin, agent_in, translator.from_client, logger("to agent"))
            except trio.BrokenResourceError:
                pass
            await agent_in.aclose()  # acplint closed its end: so does the agent's

        nursery.start_soon(to_agent)
        try:
            await pump(agent_out, stdout, translator.from_agent, logger("to acplint"))
        except trio.BrokenResourceError:
            process.terminate()
        await process.wait()
        nursery.cancel_scope.cancel()
    return process.returncode or 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: acplint_shim.py AGENT_COMMAND...", file=sys.stderr)
        sys.exit(2)
    sys.exit(trio.run(main, sys.argv[1:]))
