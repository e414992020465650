"""Any interleaving of steer, follow-up, inject, run and cancel keeps the
inbox, the journal and the history consistent."""

import random

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrio import AgentSpec, Runtime, ScriptedModel, ToolResultMessage
from agentrio.journal import SessionState
from agentrio.messages import AssistantMessage

from .helpers import calls, say, sleeper

OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["steer", "followup", "inject", "run", "cancel", "cancel_keep", "wait"]),
        st.sampled_from([0, 0.5, 1, 3]),
    ),
    min_size=1,
    max_size=12,
)


def _replies(seed):
    """Replies that think a while, then answer or ask for a few calls."""
    rng = random.Random(seed)

    async def answer(request):
        await trio.sleep(rng.choice([0, 0.5, 2]))
        if rng.random() < 0.5:
            return calls(*[("sleep", {"seconds": rng.choice([0, 1, 4]), "tag": str(i)}) for i in range(rng.randint(1, 3))])
        return say("ok")

    return [answer] * 200


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPERATIONS, st.integers(0, 1000))
def test_any_interleaving_keeps_inbox_journal_and_history_consistent(operations, seed):
    async def main():
        async with Runtime() as rt:
            model = ScriptedModel(_replies(seed))
            agent = await rt.create(AgentSpec("a", model, tools=[sleeper(mode=random.Random(seed).choice(["parallel", "exclusive"]))]))
            results = []
            async with trio.open_nursery() as nursery:

                async def run(prompt):
                    results.append(await agent.run(prompt))

                for i, (op, delay) in enumerate(operations):
                    if op == "run":
                        nursery.start_soon(run, f"run {i}")
                    elif op in ("steer", "followup", "inject"):
                        await getattr(agent, op)(f"{op} {i}")
                    elif op == "cancel":
                        await agent.cancel()
                    elif op == "cancel_keep":
                        await agent.cancel(keep_inbox=True)
                    else:
                        await agent.wait_idle()
                    await trio.sleep(delay)
                await agent.cancel()  # leftover kept input would otherwise wait for a wake-up
                await agent.wait_idle()

            # Every run() returned; none ended because a request was invalid.
            assert len(results) == sum(op == "run" for op, _ in operations)
            assert not any(r.stop_reason in ("model_error", "error") for r in results), results
            # The queues and the history are the projection of the journal.
            _, records = await rt.store.load_session(agent.session_id)
            replayed = SessionState()
            for record in records:
                replayed.apply(record)
            assert replayed.next_step == list(agent.inbox.next_step) == []
            assert replayed.next_turn == list(agent.inbox.next_turn) == []
            assert replayed.messages == list(agent.messages)
            assert not replayed.step_open and not replayed.turn_open
            # Every call in history is answered, once.
            called = [c.id for m in agent.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
            answered = [m.tool_call_id for m in agent.messages if isinstance(m, ToolResultMessage)]
            assert sorted(called) == sorted(answered)
            assert agent.running_tools == ()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
