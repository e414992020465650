"""bench/acplint_shim.py: each of acplint's wire bugs it documents is
translated, in its direction, and nothing else is touched."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

SHIM = Path(__file__).resolve().parents[2] / "bench" / "acplint_shim.py"
_spec = importlib.util.spec_from_file_location("acplint_shim", SHIM)
assert _spec is not None and _spec.loader is not None
_shim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shim)
Translator = _shim.Translator


def request(id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def update(body: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": body}}


def test_acplints_requests_and_answers_reach_the_agent_as_the_schema_has_them() -> None:
    shim = Translator()
    initialize = shim.from_client(
        request(1, "initialize", {"protocolVersion": "1", "clientCapabilities": {}})
    )
    assert initialize["params"]["protocolVersion"] == 1  # C1
    prompt = shim.from_client(request(2, "session/prompt", {"sessionId": "s", "content": [{"type": "text"}]}))
    assert prompt["params"] == {"sessionId": "s", "prompt": [{"type": "text"}]}  # C2
    option = shim.from_client(request(4, "session/set_config_option", {"sessionId": "s", "optionId": "m"}))
    assert option["params"] == {"sessionId": "s", "configId": "m"}  # C4
    asked = request(7, "session/request_permission", {"sessionId": "s", "options": [], "toolCall": {}})
    shim.from_agent(asked)
    answer = {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"outcome": {"optionId": "allow-once", "optionKind": "allow"}},
    }
    assert shim.from_client(answer)["result"] == {
        "outcome": {"outcome": "selected", "optionId": "allow-once"}
    }
    # An answer to anything else, and a well-formed prompt, go through as they are.
    other = {"jsonrpc": "2.0", "id": 8, "result": {"outcome": {"optionId": "x"}}}
    assert shim.from_client(dict(other)) == other
    good = request(3, "session/prompt", {"sessionId": "s", "prompt": []})
    assert shim.from_client(good)["params"] == {"sessionId": "s", "prompt": []}


def test_the_agents_messages_reach_acplint_as_it_models_them() -> None:
    shim = Translator()
    shim.from_client(request(1, "initialize", {"protocolVersion": 1}))
    result = shim.from_agent({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}})["result"]
    assert result == {"protocolVersion": "1"}  # A1
    chunk = shim.from_agent(update({"sessionUpdate": "agent_message_chunk", "content": {}}))
    assert chunk["params"]["update"]["sessionUpdate"] == "agentMessageChunk"  # A2
    entries = [{"content": "a", "priority": "high", "status": "pending"}]
    plan = shim.from_agent(update({"sessionUpdate": "plan", "entries": entries}))["params"]["update"]
    assert plan == {"sessionUpdate": "plan", "entries": entries, "plan": {"entries": entries}}  # A3
    option = {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"}
    params = {"sessionId": "s", "toolCall": {"toolCallId": "c", "title": "write a.txt"}, "options": [option]}
    asked = shim.from_agent(request(5, "session/request_permission", params))["params"]
    assert asked["description"] == "write a.txt"  # A4
    assert asked["options"] == [{**option, "id": "allow-once", "label": "Allow once"}]
    shim.from_client(request(2, "session/new", {"cwd": "/", "mcpServers": []}))
    configured = {"id": "mode", "name": "Mode", "type": "select"}
    new = shim.from_agent(
        {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s", "configOptions": [configured]}}
    )
    assert new["result"]["configOptions"] == [{**configured, "label": "Mode"}]  # A5
    changed = shim.from_agent(
        update({"sessionUpdate": "config_option_update", "configOptions": [configured]})
    )
    assert changed["params"]["update"]["configOptions"][0]["label"] == "Mode"
    # A response whose request was not initialize keeps its integer.
    shim.from_client(request(3, "session/new", {}))
    assert shim.from_agent({"jsonrpc": "2.0", "id": 3, "result": {"protocolVersion": 1}})["result"] == {
        "protocolVersion": 1
    }
