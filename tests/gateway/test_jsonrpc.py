"""The JSON-RPC peer against a hostile or careless client."""

from __future__ import annotations

import json
import math

import trio

from agentrio.gateway.acp.jsonrpc import Peer, RpcError
from agentrio.gateway.acp.outbox import Budget, Outbox, encode


class MemoryTransport:
    """Messages in through one channel, out through another."""

    def __init__(self) -> None:
        self.to_peer, self._incoming = trio.open_memory_channel[str | None](math.inf)
        self._outgoing, self.from_peer = trio.open_memory_channel[str](math.inf)

    async def receive(self) -> str | None:
        return await self._incoming.receive()

    async def send(self, text: str) -> None:
        await self._outgoing.send(text)

    async def reply(self) -> dict:
        return json.loads(await self.from_peer.receive())


async def echo(method: str, params):
    if method == "echo":
        return params
    if method == "boom":
        raise KeyError("secret internals")
    raise RpcError(-32601, f"unknown method {method!r}")


async def test_bad_messages_get_error_responses_and_the_peer_keeps_serving():
    transport = MemoryTransport()
    peer = Peer(transport, echo)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run)
        for text in (
            "not json",
            "[1, 2]",
            '{"jsonrpc":"2.0","id":1,"method":"nope"}',
            '{"jsonrpc":"2.0","id":2,"method":"boom"}',
            '{"jsonrpc":"2.0","id":3,"method":7}',
            '{"jsonrpc":"2.0","id":4,"method":"echo","params":{"a":1}}',
        ):
            transport.to_peer.send_nowait(text)
        replies = [await transport.reply() for _ in range(6)]
        # Errors found while reading are answered at once; requests as they end.
        by_id = {r["id"]: r for r in replies if r["id"] is not None}
        assert [r["error"]["code"] for r in replies if r["id"] is None] == [-32700, -32600]
        assert {i: r.get("error", {}).get("code") for i, r in by_id.items()} == {
            1: -32601,
            2: -32603,
            3: -32600,
            4: None,
        }
        assert "KeyError" in by_id[2]["error"]["message"]
        assert by_id[4] == {"jsonrpc": "2.0", "id": 4, "result": {"a": 1}}
        transport.to_peer.send_nowait(None)  # the client leaves
    assert peer.closed and peer.dropped is None


async def test_a_notification_gets_no_response_even_when_it_fails():
    transport = MemoryTransport()
    peer = Peer(transport, echo)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run)
        transport.to_peer.send_nowait('{"jsonrpc":"2.0","method":"boom"}')
        transport.to_peer.send_nowait('{"jsonrpc":"2.0","id":9,"method":"echo","params":1}')
        assert await transport.reply() == {"jsonrpc": "2.0", "id": 9, "result": 1}
        transport.to_peer.send_nowait(None)


async def test_a_client_is_dropped_for_too_many_bytes_waiting_not_for_many_messages():
    transport = MemoryTransport()
    peer = Peer(transport, echo, queue_bytes=1_000_000)
    # Not running: nothing is written. Two thousand small messages are no reason to drop it.
    for i in range(2000):
        peer.notify("note", {"i": i})
    assert peer.dropped is None
    peer.notify("note", {"big": "x" * 1_000_000})
    assert peer.dropped == "more than 1000000 bytes wait for the client"


class StuckTransport(MemoryTransport):
    """A client that reads nothing: every send waits forever."""

    async def send(self, text: str) -> None:
        await trio.sleep_forever()


async def test_a_client_is_dropped_only_once_a_message_has_waited_the_stall_timeout_to_leave(autojump_clock):
    transport = StuckTransport()
    peer = Peer(transport, echo, stall_timeout=30)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run)
        peer.notify("note", {"i": 0})  # taken by the writer, never leaves
        await trio.sleep(29)
        peer.notify("note", {"i": 1})
        assert peer.dropped is None
        await trio.sleep(2)
        peer.notify("note", {"i": 2})
        assert peer.dropped == "the client took nothing for 30 s"
    assert peer.closed


async def test_a_full_budget_drops_the_client_with_the_most_waiting_first():
    budget = Budget(50_000)
    small, large = Peer(MemoryTransport(), echo, budget=budget), Peer(MemoryTransport(), echo, budget=budget)
    small.notify("note", {"text": "s" * 10_000})
    large.notify("note", {"text": "l" * 30_000})
    assert budget.used > 40_000 and not small.dropped and not large.dropped
    small.notify("note", {"text": "s" * 15_000})  # the total goes over: the larger queue goes
    assert large.dropped and large.dropped.startswith("the server holds more than 50000 bytes")
    assert small.dropped is None and budget.used == small.waiting < 50_000


def progress(call_id, text, status=None):
    update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
    }
    if status:
        update["status"] = status
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}


async def test_a_waiting_progress_snapshot_is_replaced_by_the_next_for_the_same_call():
    outbox = Outbox()
    for message in (
        progress("a", "1"),
        progress("b", "1"),
        progress("a", "12"),
        progress("a", "12", "completed"),
        progress("a", "123"),
        progress("b", "12"),
    ):
        outbox.put(message)
    outbox.close()
    taken = []
    while (item := await outbox.get()) is not None:
        update = json.loads(item)["params"]["update"]
        taken.append((update["toolCallId"], update["content"][0]["content"]["text"], update.get("status")))
    # b's newer snapshot took the place of its older one; a's came before a's completion and stayed there.
    assert taken == [("a", "12", None), ("b", "12", None), ("a", "12", "completed"), ("a", "123", None)]
    assert outbox.size == 0


async def test_a_stream_is_made_as_it_is_taken_and_costs_nothing_while_it_waits():
    outbox = Outbox()
    made = []

    def stream():
        for i in range(3):
            made.append(i)
            yield {"jsonrpc": "2.0", "method": "note", "params": {"i": i, "text": "x" * 1_000_000}}

    outbox.put_stream(stream())
    outbox.put({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert made == [] and outbox.size < 1000
    first = json.loads(await outbox.get())
    assert first["params"]["i"] == 0 and made == [0]
    assert [json.loads(await outbox.get()).get("id") for _ in range(3)] == [None, None, 1]


async def test_text_chunks_merge_while_they_wait_and_nothing_else_does():
    outbox = Outbox()

    def chunk(text, kind="agent_message_chunk", session="s"):
        return {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": session,
                "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}},
            },
        }

    for message in (
        chunk("a"),
        chunk("b"),
        chunk("t", "agent_thought_chunk"),
        chunk("c"),
        chunk("d", session="x"),
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        chunk("e"),
    ):
        outbox.put(message)
    outbox.close()
    texts = []
    while (item := await outbox.get()) is not None:
        message = json.loads(item)
        texts.append(message.get("params", {}).get("update", {}).get("content", {}).get("text", "result"))
    assert texts == ["ab", "t", "c", "d", "result", "e"]


async def test_reading_goes_on_while_requests_are_served_and_one_too_many_is_refused_at_once():
    transport = MemoryTransport()
    release = trio.Event()

    async def handler(method, params):
        if method == "ask":
            return await peer.request("question", {})  # its answer must be read while "wait" runs
        await release.wait()
        return "released"

    peer = Peer(transport, handler, max_inflight=2)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peer.run)
        with trio.fail_after(5):
            transport.to_peer.send_nowait('{"jsonrpc":"2.0","id":1,"method":"ask"}')
            transport.to_peer.send_nowait('{"jsonrpc":"2.0","id":2,"method":"wait"}')
            question = await transport.reply()
            assert question["method"] == "question"
            transport.to_peer.send_nowait('{"jsonrpc":"2.0","id":3,"method":"wait"}')
            busy = await transport.reply()
            assert busy["id"] == 3 and busy["error"]["code"] == -32011
            assert busy["error"]["message"] == (
                "2 requests are already being served on this connection; wait for one to end"
            )
            transport.to_peer.send_nowait(json.dumps({"jsonrpc": "2.0", "id": question["id"], "result": 42}))
            assert await transport.reply() == {"jsonrpc": "2.0", "id": 1, "result": 42}
            release.set()
            assert await transport.reply() == {"jsonrpc": "2.0", "id": 2, "result": "released"}
        transport.to_peer.send_nowait(None)


async def test_a_stream_that_fails_ends_there_and_what_follows_it_still_goes():
    outbox = Outbox()

    def stream():
        yield {"jsonrpc": "2.0", "method": "note", "params": {"i": 0}}
        raise ValueError("a history that cannot be mapped")

    outbox.put_stream(stream())
    outbox.put({"jsonrpc": "2.0", "id": 1, "result": {}})
    outbox.close()
    taken = []
    while (item := await outbox.get()) is not None:
        taken.append(json.loads(item))
    assert taken == [
        {"jsonrpc": "2.0", "method": "note", "params": {"i": 0}},
        {"jsonrpc": "2.0", "id": 1, "result": {}},
    ]


def test_a_nan_in_an_outgoing_message_is_sent_as_null_not_as_invalid_json():
    assert (
        encode({"id": 1, "result": {"x": [math.nan, math.inf, 1.5]}})
        == '{"id":1,"result":{"x":[null,null,1.5]}}'
    )
