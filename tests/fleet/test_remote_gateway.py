"""Gateways on several hosts share a PostgreSQL store: a client of any of
them opens, prompts and follows a session that another one holds, from the
journal (``agentrio.gateway.acp.remote``). In-process gateways, each with a
store and runtime of its own, over real WebSocket connections."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import trio
import trio.testing

from agentrio import AgentSpec, AssistantMessage, PostgresStore, ScriptedModel, Text, ToolCall, tool
from agentrio.journal.postgres.database import Database

from ..gateway.ws_harness import connected, running_gateway
from ..journal.proxy import Proxy

LEASE = 2.0


def inputs_left(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True, options="-c search_path=agentrio") as conn:
        return conn.execute("SELECT count(*) FROM inputs").fetchone()[0]


def user_messages(dsn: str, session_id: str) -> list[str]:
    from agentrio.journal.codec import decode_record

    with psycopg.connect(dsn, autocommit=True, options="-c search_path=agentrio") as conn:
        rows = conn.execute(
            "SELECT data FROM records WHERE session_id = %s AND kind = 'message_appended' ORDER BY seq",
            (session_id,),
        ).fetchall()
    messages = [decode_record(data).message for (data,) in rows]
    return [m.text for m in messages if m.role == "user"]


@tool
async def shout(word: str) -> str:
    """Say a word louder."""
    return word.upper()


def spec_for(replies: list) -> Callable[[Path], AgentSpec]:
    model = ScriptedModel(replies, chunk_size=4)
    return lambda cwd: AgentSpec("test", model, tools=[shout])


async def test_a_client_of_another_gateway_prompts_a_held_session_and_follows_its_answer(dsn, tmp_path):
    replies = [
        AssistantMessage([Text("Let me shout."), ToolCall("c1", "shout", {"word": "hey"})]),
        AssistantMessage([Text("It is HEY.")]),
    ]
    async with (
        running_gateway(tmp_path, [], spec_for=spec_for(replies), store=PostgresStore(dsn, lease=LEASE)) as a,
        running_gateway(tmp_path, [], spec_for=spec_for([]), store=PostgresStore(dsn, lease=LEASE)) as b,
        trio.open_nursery() as nursery,
    ):
        async with connected(a.url(), nursery) as on_a, connected(b.url(), nursery) as on_b:
            session_id = await on_a.open_session()
            await on_b.open_session(load=session_id)
            assert session_id not in b.hub.sessions  # held by a: b follows it
            with trio.fail_after(15):
                assert await on_b.prompt(session_id, "shout hey") == "end_turn"
            # b's client saw the answer; a's client (attached where it runs) the same, streamed.
            assert on_b.text() == on_a.text() == "Let me shout.It is HEY."
            statuses = [
                u.get("status")
                for u in on_b.updates()
                if u["sessionUpdate"] in ("tool_call", "tool_call_update") and u.get("status")
            ]
            assert statuses == ["pending", "in_progress", "completed"]
            # b's own prompt is not echoed to it; a's client is shown it.
            assert not on_b.updates("user_message_chunk")
            assert [u["content"]["text"] for u in on_a.updates("user_message_chunk")] == ["shout hey"]
            assert user_messages(dsn, session_id) == ["shout hey"]
            assert inputs_left(dsn) == 0
        # A client that loads it now is shown the same transcript on either host.
        async with connected(a.url(), nursery) as again_a, connected(b.url(), nursery) as again_b:
            await again_a.open_session(load=session_id)
            await again_b.open_session(load=session_id)

            # The conversation; a session's own state (status, commands, usage,
            # modes) is announced by the host that runs it, not by a follower.
            state = {"session_info_update", "available_commands_update", "usage_update"}

            def transcript(client) -> list[dict]:
                return [u for u in client.updates() if u["sessionUpdate"] not in state]

            assert transcript(again_a) == transcript(again_b)
            assert [u["sessionUpdate"] for u in transcript(again_b)] == [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "agent_message_chunk",
            ]
        nursery.cancel_scope.cancel()


def gated(gate: trio.Event, started: trio.Event):
    async def reply(request):
        started.set()
        await gate.wait()
        return AssistantMessage([Text("never said")])

    return reply


async def test_a_session_whose_holder_is_cut_off_mid_watch_is_taken_over_and_answered(
    postgres, dsn, tmp_path
):
    """Holder a stops renewing its lease (its connections stall, as when its
    host dies) while a's model answers a prompt of b's client: b takes the
    session over once the lease has run out, continues the cut turn, and
    the prompt gets b's answer, its input taken in once."""
    database = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    never, started = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        proxy = Proxy(postgres.socket)
        await nursery.start(proxy.serve)
        holder = PostgresStore(proxy.dsn(database), lease=LEASE)
        async with (
            running_gateway(tmp_path, [], spec_for=spec_for([gated(never, started)]), store=holder) as a,
            running_gateway(
                tmp_path,
                [],
                spec_for=spec_for([AssistantMessage([Text("b answers")])]),
                store=PostgresStore(dsn, lease=LEASE),
            ) as b,
        ):
            async with connected(a.url(), nursery) as on_a, connected(b.url(), nursery) as on_b:
                session_id = await on_a.open_session()
                await on_b.open_session(load=session_id)
                answers, answered = [], trio.Event()

                async def prompt() -> None:
                    answers.append(await on_b.prompt(session_id, "are you there"))
                    answered.set()

                nursery.start_soon(prompt)
                with trio.fail_after(10):
                    await started.wait()
                    await on_b.wait_for(
                        lambda: any(
                            u.get("_meta", {}).get("agentrio", {}).get("status") == "running"
                            for u in on_b.updates("session_info_update")
                        )
                    )
                proxy.stall()
                cut = time.monotonic()
                with trio.fail_after(LEASE * 5):
                    await answered.wait()
                taken = time.monotonic() - cut
                assert answers == ["end_turn"]
                assert session_id in b.hub.sessions  # it runs on b now
                assert on_b.text() == "b answers"
                proxy.heal()
                with trio.fail_after(10):
                    await holder.until_usable()
            print(
                f"lease {LEASE} s: the holder cut off -> the prompt answered by the other gateway in {taken:.2f} s"
            )
            assert user_messages(dsn, session_id) == ["are you there"]
            assert inputs_left(dsn) == 0
        nursery.cancel_scope.cancel()


async def test_a_cancel_from_another_gateway_reaches_the_holder(dsn, tmp_path):
    never, started = trio.Event(), trio.Event()
    async with (
        running_gateway(
            tmp_path, [], spec_for=spec_for([gated(never, started)]), store=PostgresStore(dsn, lease=LEASE)
        ) as a,
        running_gateway(tmp_path, [], spec_for=spec_for([]), store=PostgresStore(dsn, lease=LEASE)) as b,
        trio.open_nursery() as nursery,
    ):
        async with connected(a.url(), nursery) as on_a, connected(b.url(), nursery) as on_b:
            session_id = await on_a.open_session()
            await on_b.open_session(load=session_id)
            answers, answered = [], trio.Event()

            async def prompt() -> None:
                answers.append(await on_b.prompt(session_id, "take your time"))
                answered.set()

            nursery.start_soon(prompt)
            with trio.fail_after(10):
                await started.wait()
            await on_b.notify("session/cancel", {"sessionId": session_id})
            with trio.fail_after(10):
                await answered.wait()
            assert answers == ["cancelled"]
            with trio.fail_after(10):  # the holder's own status follows its pump
                await on_a.wait_for(lambda: a.hub.sessions[session_id].status == "idle")
        nursery.cancel_scope.cancel()


async def test_a_database_cut_while_a_gateway_follows_a_session_neither_spins_nor_breaks_it(
    postgres, dsn, tmp_path, monkeypatch
):
    """b's connections to the database are cut (and new ones held) while its
    client waits for an answer: b reads nothing while the database is gone
    (no loop of failing reads), and once it is back the client gets the
    answer a gave meanwhile, and b serves on."""
    database = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
    gate, started = trio.Event(), trio.Event()

    async def answer(request):
        started.set()
        await gate.wait()
        return AssistantMessage([Text("answered while b was cut off")])

    reads = []
    records_after = Database.records_after

    def counted(db, *args):
        reads.append(time.monotonic())
        return records_after(db, *args)

    monkeypatch.setattr(Database, "records_after", counted)
    async with trio.open_nursery() as nursery:
        proxy = Proxy(postgres.socket)
        await nursery.start(proxy.serve)
        follower = PostgresStore(proxy.dsn(database), lease=LEASE)
        async with (
            running_gateway(
                tmp_path, [], spec_for=spec_for([answer]), store=PostgresStore(dsn, lease=LEASE)
            ) as a,
            running_gateway(tmp_path, [], spec_for=spec_for([]), store=follower) as b,
            connected(a.url(), nursery) as on_a,
            connected(b.url(), nursery) as on_b,
        ):
            session_id = await on_a.open_session()
            await on_b.open_session(load=session_id)
            answers, answered = [], trio.Event()

            async def prompt() -> None:
                answers.append(await on_b.prompt(session_id, "slowly"))
                answered.set()

            nursery.start_soon(prompt)
            with trio.fail_after(10):
                await started.wait()
            proxy.stall()
            proxy.cut()
            cut = time.monotonic()
            await trio.sleep(0.2)
            gate.set()  # a answers while b is cut off
            await trio.sleep(2.5)
            during = [t for t in reads if t > cut]
            assert len(during) <= 3, f"{len(during)} reads while the database was cut off"
            assert not answered.is_set()
            proxy.heal()
            with trio.fail_after(15):
                await answered.wait()
                await follower.until_usable()
            assert answers == ["end_turn"]
            assert on_b.text() == "answered while b was cut off"
            # b goes on serving: a new session of its own runs.
            assert await on_b.open_session() != session_id
        nursery.cancel_scope.cancel()


async def test_a_client_that_reads_nothing_holds_its_view_to_one_page_of_the_journal(tmp_path):
    """The journal is read for a client a page at a time, the next page only
    once the client has taken the last: a client that reads nothing costs
    one page, however much the holder writes."""
    from agentrio.gateway.acp.journal_view import JournalView
    from agentrio.gateway.acp.remote import PAGE, _Watch
    from agentrio.journal.records import MessageAppended

    class EndlessStore:
        reads = 0

        async def read_records(self, session_id, after=0, *, limit=None):
            return []

        async def next_records(self, session_id, after, *, limit=None):
            await trio.lowlevel.checkpoint()
            self.reads += 1
            return [
                (seq, MessageAppended(AssistantMessage([Text(f"m{seq}")])))
                for seq in range(after + 1, after + limit + 1)
            ]

    class Unread:
        def __init__(self) -> None:
            self.streams = []

        def send_stream(self, messages) -> None:
            self.streams.append(messages)

    store, peer = EndlessStore(), Unread()
    watch = _Watch("s1", store, peer, JournalView(tmp_path))
    with trio.fail_after(5):  # (a view that did not wait for its client would read on and on)
        async with trio.open_nursery() as nursery:
            await nursery.start(watch.run, True)
            await trio.testing.wait_all_tasks_blocked()
            assert store.reads == 1 and len(peer.streams) == 2  # the replay, then one page
            assert len(list(peer.streams[0])) == 1  # (the status: no history yet)
            page = list(peer.streams[1])  # the client takes the page ...
            assert len(page) == PAGE and page[0]["params"]["update"]["content"]["text"] == "m1"
            await trio.testing.wait_all_tasks_blocked()
            assert store.reads == 2 and len(peer.streams) == 3  # ... and the next is read
            watch.stop()


async def test_a_followup_from_another_gateway_is_posted_once_and_run_by_the_holder(dsn, tmp_path):
    replies = [AssistantMessage([Text("first")]), AssistantMessage([Text("second")])]
    async with (
        running_gateway(tmp_path, [], spec_for=spec_for(replies), store=PostgresStore(dsn, lease=LEASE)) as a,
        running_gateway(tmp_path, [], spec_for=spec_for([]), store=PostgresStore(dsn, lease=LEASE)) as b,
        trio.open_nursery() as nursery,
        connected(a.url(), nursery) as on_a,
        connected(b.url(), nursery) as on_b,
    ):
        session_id = await on_a.open_session()
        await on_b.open_session(load=session_id)
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "one"}]}
        first = await on_b.call("_agentrio/followup", prompt)
        second = await on_b.call(
            "_agentrio/followup", {**prompt, "prompt": [{"type": "text", "text": "two"}]}
        )
        assert first["inputId"].startswith("remote_") and first != second
        with trio.fail_after(10):
            await on_b.wait_for(lambda: on_b.text() == "firstsecond")
            await on_a.wait_for(lambda: on_a.text() == "firstsecond")
        assert user_messages(dsn, session_id) == ["one", "two"]
        assert inputs_left(dsn) == 0
        nursery.cancel_scope.cancel()
