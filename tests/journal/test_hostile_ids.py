"""Session ids and agent names are checked where they enter a store: a
clear ValueError, and the store (its other sessions) goes on."""

from __future__ import annotations

import pytest

from agentrio import AgentSpec, Runtime, ScriptedModel
from agentrio.journal import SessionInfo
from agentrio.journal.store import MAX_ID_BYTES

from ..helpers import say

BAD_IDS = [
    ("x" * 9000, "9000 bytes long: at most 256 bytes"),
    ("é" * 129, "258 bytes long"),
    ("lone \ud800 surrogate", "not valid Unicode"),
    ("nul\x00", "control character"),
    ("new\nline", "control character"),
    ("", "non-empty string"),
]


@pytest.mark.parametrize("bad, error", BAD_IDS, ids=[e.split(":")[0] for _, e in BAD_IDS])
async def test_a_bad_session_id_is_a_value_error_and_the_store_goes_on(new_store, bad, error):
    async with new_store() as store:
        for call in (
            lambda: store.create_session(SessionInfo(bad)),
            lambda: store.load_state(bad),
            lambda: store.load_session(bad),
            lambda: store.claim_session(bad),
            lambda: store.delete_session(bad),
        ):
            with pytest.raises(ValueError, match=error):
                await call()
        with pytest.raises(ValueError, match=f"agent name .*{error}"):
            await store.create_session(SessionInfo("fine", agent_name=bad))
        longest = "y" * MAX_ID_BYTES
        await store.create_session(SessionInfo(longest, agent_name=longest))
    async with Runtime(new_store()) as rt:
        if bad:  # (no id: a fresh one)
            with pytest.raises(ValueError, match=error):
                await rt.create(AgentSpec("a", ScriptedModel([])), bad)
        agent = await rt.create(AgentSpec("a", ScriptedModel([say("ok")])), "y" * MAX_ID_BYTES)
        assert (await agent.run("hi")).stop_reason == "completed"
        assert [info.session_id for info in await rt.store.list_sessions()] == [longest]
