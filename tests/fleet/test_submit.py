"""Input submitted to the fleet is answered by whichever runtime serves its
spec, and its outcome is read from the journal."""

from __future__ import annotations

import pytest
import trio

from agentrio import AgentSpec, AssistantMessage, Outcome, PostgresStore, Runtime, ScriptedModel, Text

LEASE = 2.0


def answering(prefix: str = "answer"):
    def reply(request):
        return AssistantMessage([Text(f"{prefix}: {request.messages[-1].text}")])

    return reply


async def test_a_submitted_prompt_is_answered_by_a_runtime_serving_its_spec(dsn):
    spec = AgentSpec("helper", ScriptedModel([answering()] * 10))
    async with Runtime(PostgresStore(dsn, lease=LEASE)) as rt, PostgresStore(dsn, lease=LEASE) as client:
        await rt.nursery.start(rt.serve, {"helper": spec})
        first = await client.submit("s1", "hello", spec="helper")
        second = await client.submit("s1", "again", spec=spec)
        assert first != second
        assert await client.outcome("s1", first, timeout=10) == Outcome("completed", "answer: hello")
        assert await client.outcome("s1", second, timeout=10) == Outcome("completed", "answer: again")
        info = [i for i in await client.list_sessions() if i.session_id == "s1"]
        assert info[0].agent_name == "helper"
        rt.nursery.cancel_scope.cancel()


async def test_an_outcome_not_reached_in_time_raises_timeout_error(dsn):
    async with PostgresStore(dsn, lease=LEASE) as client:
        input_id = await client.submit("s1", "hello", spec="nobody")
        with trio.fail_after(5):
            with pytest.raises(TimeoutError, match="no outcome within 0.2 s"):
                await client.outcome("s1", input_id, timeout=0.2)
