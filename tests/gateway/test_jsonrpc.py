"""The JSON-RPC peer against a hostile or careless client."""

from __future__ import annotations

import json
import math

import trio

from agentrio.gateway.acp.jsonrpc import Outbox, Peer, RpcError


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
        for text in ("not json", "[1, 2]", '{"jsonrpc":"2.0","id":1,"method":"nope"}',
                     '{"jsonrpc":"2.0","id":2,"method":"boom"}', '{"jsonrpc":"2.0","id":3,"method":7}',
                     '{"jsonrpc":"2.0","id":4,"method":"echo","params":{"a":1}}'):
            transport.to_peer.send_nowait(text)
        replies = [await transport.reply() for _ in range(6)]
        assert [r.get("error", {}).get("code") for r in replies] == [-32700, -32600, -32601, -32603, -32600, None]
        assert "KeyError" in replies[3]["error"]["message"]
        assert replies[5] == {"jsonrpc": "2.0", "id": 4, "result": {"a": 1}}
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


async def test_a_full_outbox_drops_the_client_instead_of_waiting():
    transport = MemoryTransport()
    peer = Peer(transport, echo, queue_size=3)
    # Not running: nothing is written, so the fourth message overflows.
    for i in range(4):
        peer.notify("note", {"i": i})
    assert peer.dropped == "the client is not reading its messages fast enough"


async def test_text_chunks_merge_while_they_wait_and_nothing_else_does():
    outbox = Outbox(max_messages=10, max_bytes=10_000)

    def chunk(text, kind="agent_message_chunk", session="s"):
        return {"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": session, "update": {"sessionUpdate": kind,
                                                            "content": {"type": "text", "text": text}}}}

    for message in (chunk("a"), chunk("b"), chunk("t", "agent_thought_chunk"), chunk("c"), chunk("d", session="x"),
                    {"jsonrpc": "2.0", "id": 1, "result": {}}, chunk("e")):
        assert outbox.put(message)
    outbox.close()
    texts = []
    while (item := await outbox.get()) is not None:
        message = json.loads(item)
        texts.append(message.get("params", {}).get("update", {}).get("content", {}).get("text", "result"))
    assert texts == ["ab", "t", "c", "d", "result", "e"]
