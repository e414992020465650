"""Hostile input against the whole loop: whatever arguments a model writes,
whatever text a user or a tool supplies, and whatever a tool raises, the run
ends, the Runtime exits in bounded time, and the journal restores exactly."""

from __future__ import annotations

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrio import (
    AgentSpec,
    AssistantMessage,
    Runtime,
    ScriptedModel,
    SQLiteStore,
    Text,
    Tool,
    ToolCall,
    ToolResult,
)
from agentrio.messages import project_tool_protocol

#: Anything JSON can say, with the awkward corners: deep nesting, huge and
#: odd numbers, control characters, lone surrogates, NULs, long strings.
_strings = st.text(st.characters(codec=None, exclude_categories=()), max_size=40) | st.sampled_from(
    ["", "\x00", "\ud800", "\u202e", "a" * 10_000, "../../etc/passwd", "<invoke name='x'>"]
)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _strings,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_strings, inner, max_size=4),
    max_leaves=30,
)
_arguments = st.dictionaries(_strings, _json, max_size=5)
_behaviours = st.sampled_from(["echo", "raise", "huge", "parts", "cancel-ish"])

SCHEMA = {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a+)+$"}}}


async def _tool(args, ctx):
    behaviour = ctx.tool_name
    if behaviour == "raise":
        raise RuntimeError(f"bad input: {args!r}"[:200])
    if behaviour == "huge":
        return "x" * 200_000
    if behaviour == "parts":
        return ToolResult([Text(repr(args)[:100])], details={"args": args})
    if behaviour == "cancel-ish":
        raise trio.TooSlowError("pretending to time out")
    return repr(args)[:500]


TOOLS = [
    Tool(name.replace("-", "_"), "", SCHEMA, _tool)
    for name in ("echo", "raise", "huge", "parts", "cancel-ish")
]


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    calls=st.lists(st.tuples(_behaviours, _arguments), min_size=1, max_size=4),
    prompt=_strings,
    answer=_strings,
)
def test_hostile_arguments_and_contents_end_the_run_and_restore_exactly(
    tmp_path_factory, calls, prompt, answer
):
    db = tmp_path_factory.mktemp("hostile") / "s.db"
    parts = [ToolCall(f"c{i}", name.replace("-", "_"), args) for i, (name, args) in enumerate(calls)]
    # A third reply for when the answer looks like tool-call markup and the
    # loop asks once for a repair.
    model = ScriptedModel(
        [
            AssistantMessage(parts),
            AssistantMessage([Text(answer or "done")]),
            AssistantMessage([Text("done")]),
        ]
    )

    async def main():
        with trio.fail_after(30):  # the whole run and the Runtime's exit are bounded
            async with SQLiteStore(db) as store, Runtime(store) as rt:
                agent = await rt.create(AgentSpec("a", model, tools=TOOLS), session_id="s")
                result = await agent.run(prompt or "go")
                history = agent.messages
            async with SQLiteStore(db) as store, Runtime(store) as rt:
                restored = await rt.create(AgentSpec("a", ScriptedModel([])), session_id="s")
                assert restored.messages == history
        return result, history

    result, history = trio.run(main)
    assert result.stop_reason == "completed", result.error
    # Every call got exactly one result, right after the message that asked.
    assert project_tool_protocol(list(history)) == list(history)
    assert [m.tool_call_id for m in history[2 : 2 + len(parts)]] == [p.id for p in parts]
