"""Any interleaving of steer, follow-up, inject, run and cancel keeps the
inbox, the journal and the history consistent."""

import random

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrio import AgentDisposed, AgentSpec, Runtime, ScriptedModel, ToolResultMessage, UserMessage
from agentrio.journal import MemoryStore, SessionState
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
            return calls(
                *[
                    ("sleep", {"seconds": rng.choice([0, 1, 4]), "tag": str(i)})
                    for i in range(rng.randint(1, 3))
                ]
            )
        return say("ok")

    return [answer] * 200


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPERATIONS, st.integers(0, 1000))
def test_any_interleaving_keeps_inbox_journal_and_history_consistent(operations, seed):
    async def main():
        async with Runtime() as rt:
            model = ScriptedModel(_replies(seed))
            agent = await rt.create(
                AgentSpec(
                    "a", model, tools=[sleeper(mode=random.Random(seed).choice(["parallel", "exclusive"]))]
                )
            )
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


# -- disposal and Runtime exit among the operations ---------------------------

OPERATIONS_WITH_DISPOSAL = st.lists(
    st.tuples(
        st.sampled_from(
            ["run", "stream", "steer", "followup", "inject", "cancel", "cancel_keep", "wait", "dispose"]
        ),
        st.sampled_from([0, 0.5, 1, 3]),
    ),
    min_size=1,
    max_size=12,
)
WAITING = ("run", "stream")


async def _call(agent, op, text):
    """``agent.run`` or ``agent.stream`` to its end: the RunResult, or the
    AgentDisposed it raised."""
    try:
        if op == "run":
            return await agent.run(text)
        async with agent.stream(text) as run:
            async for _ in run:
                pass
        return run.result
    except AgentDisposed as exc:
        return exc


def _occurrences(state, text):
    said = [m.text for m in state.messages if isinstance(m, UserMessage)]
    queued = [q.message.text for q in (*state.next_step, *state.next_turn)]
    return said.count(text) + queued.count(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPERATIONS_WITH_DISPOSAL, st.integers(0, 1000), st.sampled_from(["dispose", "exit"]))
def test_any_interleaving_with_disposal_returns_every_run_and_keeps_every_accepted_input(
    operations, seed, ending
):
    """Whatever was queued or running when the agent is disposed or the
    Runtime exits (callers waiting outside its block), every run() and
    stream() returns, disposal and exit return, each accepted input is in
    the journal once (unless a cancel discarded it), and the session
    restores exactly and takes a strict provider's next request."""

    async def main():
        store = MemoryStore()
        spec = AgentSpec("a", ScriptedModel(_replies(seed)), tools=[sleeper()])
        results, accepted = {}, set()
        # Virtual time: a hang jumps the clock to this deadline and fails.
        with trio.fail_after(3600):
            async with trio.open_nursery() as callers:

                async def wait_for(op, text):
                    results[text] = await _call(agent, op, text)

                async with Runtime(store) as rt:
                    agent = await rt.create(spec)
                    for i, (op, delay) in enumerate(operations):
                        text = f"{op} {i}"
                        if op in WAITING:
                            callers.start_soon(wait_for, op, text)
                        elif op in ("steer", "followup", "inject"):
                            try:
                                await getattr(agent, op)(text)
                                accepted.add(text)
                            except AgentDisposed:
                                pass
                        elif op in ("cancel", "cancel_keep"):
                            await agent.cancel(keep_inbox=op == "cancel_keep")
                        elif op == "wait":
                            await agent.wait_idle()
                        else:
                            await agent.dispose()
                        await trio.sleep(delay)
                    if ending == "dispose":
                        await agent.dispose()

        history = list(agent.messages)

        started = [f"{op} {i}" for i, (op, _) in enumerate(operations) if op in WAITING]
        assert sorted(results) == sorted(started)  # every caller returned
        for text, result in results.items():
            if isinstance(result, AgentDisposed):
                continue
            assert result.stop_reason not in ("model_error", "error"), (text, result)
            accepted.add(text)
        loaded = await store.load_state(agent.session_id)
        discarding = any(op == "cancel" for op, _ in operations)
        for text in accepted:
            count = _occurrences(loaded.state, text)
            assert count == 1 or (discarding and count == 0), (text, count)
        async with Runtime(store) as rt:
            strict = AgentSpec("a", ScriptedModel([say("ok")] * 100), tools=[sleeper()])
            restored = await rt.create(strict, agent.session_id)
            assert list(restored.messages) == history
            with trio.fail_after(600):
                after = await restored.run("after")
            assert after.stop_reason == "completed", after

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
