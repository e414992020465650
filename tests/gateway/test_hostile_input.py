"""Malformed and hostile messages get JSON-RPC errors; the connection and
the process go on serving, over stdio and over WebSocket."""

from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

import trio
import trio_websocket

from .acp_harness import ROOT
from .ws_harness import TOKEN, running_gateway

#: (what the client sends, the error code it gets back, or None for no answer, with the message's start)
ATTACKS = [
    ("[" * 100_000, -32700, "the message is not JSON"),
    ("[" * 100 + "]" * 100, -32600, "the message nests deeper than 64 levels"),
    (
        '{"jsonrpc":"2.0","id":NaN,"method":"initialize","params":{"protocolVersion":1}}',
        -32700,
        "the message",
    ),
    (
        '{"jsonrpc":"2.0","id":[1],"method":"initialize","params":{"protocolVersion":1}}',
        -32600,
        "an id is a string, an integer or null",
    ),
    ('{"jsonrpc":"2.0","id":1.5,"method":"initialize","params":{"protocolVersion":1}}', -32600, "an id is"),
    ('{"jsonrpc":"2.0","id":[1],"result":{}}', None, ""),  # a response nobody asked for, with a list id
    ('{"jsonrpc":"2.0","id":{"a":1},"error":{"code":1,"message":"x"}}', None, ""),
    (
        '{"jsonrpc":"2.0","id":10,"method":"initialize","params":[1]}',
        -32602,
        "the params of initialize must be an object",
    ),
    (
        '{"jsonrpc":"2.0","id":11,"method":"initialize","params":{"protocolVersion":"1"}}',
        -32602,
        "protocolVersion must be an integer",
    ),
    (
        '{"jsonrpc":"2.0","id":12,"method":"session/new","params":{"cwd":7,"mcpServers":[]}}',
        -32602,
        "cwd must be a string",
    ),
    (
        '{"jsonrpc":"2.0","id":13,"method":"session/new","params":{"cwd":"","mcpServers":"all"}}',
        -32602,
        "mcpServers must be a list",
    ),
    (
        '{"jsonrpc":"2.0","id":14,"method":"session/new","params":{"cwd":"/tmp/\\u0000x","mcpServers":[]}}',
        -32602,
        "cwd",
    ),
    (
        (
            '{"jsonrpc":"2.0","id":15,"method":"session/new","params":{"cwd":"","mcpServers":[{"name":"x",'
            '"command":"y","args":[],"env":[{"name":"A"}]}]}}'
        ),
        -32602,
        "an MCP server's env",
    ),
    (
        '{"jsonrpc":"2.0","id":16,"method":"session/load","params":{"sessionId":["s"],"cwd":"","mcpServers":[]}}',
        -32602,
        "sessionId must be a string",
    ),
    (
        '{"jsonrpc":"2.0","id":17,"method":"session/prompt","params":{"sessionId":"s","prompt":"hi"}}',
        -32002,
        "no ",
    ),
    (
        '{"jsonrpc":"2.0","id":18,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":7}}',
        -32602,
        "clientCapabilities must be an object",
    ),
    ('{"jsonrpc":"2.0","id":true,"method":"initialize","params":{"protocolVersion":1}}', -32600, "an id is"),
]
INITIALIZE = '{"jsonrpc":"2.0","id":99,"method":"initialize","params":{"protocolVersion":1}}'
#: Answered after every attack (requests are served in their own tasks, so
#: the last request sent is not always the last answered: this one waits).
PING = '{"jsonrpc":"2.0","id":100,"method":"session/list","params":{}}'


def check(replies: list[dict]) -> None:
    """The replies to INITIALIZE then ATTACKS: the answer to initialize
    first, then errors found while reading (id null) in order, answers to
    requests as they end."""
    assert replies[0]["id"] == 99 and replies[0]["result"]["protocolVersion"] == 1, replies[0]
    replies = replies[1:]
    expected = [
        (json.loads(text).get("id") if code not in (-32700, -32600) else None, code, start)
        for text, code, start in ATTACKS
        if code is not None
    ]
    assert len(replies) == len(expected), replies
    unnamed = [r for r in replies if r["id"] is None]
    named = {r["id"]: r for r in replies if r["id"] is not None}
    for request_id, code, start in expected:
        reply = unnamed.pop(0) if request_id is None else named.pop(request_id)
        assert reply["error"]["code"] == code and reply["error"]["message"].startswith(start), (reply, code)
        assert "Error" not in reply["error"]["message"]  # plain English, no Python exception names
    assert not named and not unnamed


async def test_hostile_lines_on_stdio_get_errors_and_the_process_goes_on(tmp_path: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "fake"}
    command = [
        sys.executable,
        "-m",
        "agentrio",
        "acp",
        "--model",
        "openai:fake",
        "--base-url",
        "http://127.0.0.1:9",
        "--db",
        str(tmp_path / "s.db"),
        "--cwd",
        str(tmp_path),
    ]
    with open(tmp_path / "err", "wb") as stderr:
        process = await trio.lowlevel.open_process(command, stdin=-1, stdout=-1, stderr=stderr, env=env)
    try:
        await process.stdin.send_all(INITIALIZE.encode() + b"\n")
        received = b""
        with trio.fail_after(30):
            while received.count(b"\n") < 1:
                received += await process.stdout.receive_some(65536)
        lines = [text for text, _, _ in ATTACKS] + ["x" * (17 * 1024 * 1024)]
        await process.stdin.send_all("".join(line + "\n" for line in lines).encode())
        with trio.fail_after(30):
            while received.count(b"\n") < len([a for a in ATTACKS if a[1] is not None]) + 2:
                received += await process.stdout.receive_some(65536)
        replies = [json.loads(line) for line in received.splitlines()]
        too_long = replies.pop(-1)  # read last, long after the others were answered
        assert too_long["error"] == {"code": -32700, "message": "a message longer than 16777216 bytes"}
        check(replies)
        await process.stdin.aclose()
        with trio.fail_after(15):
            assert await process.wait() == 0
    finally:
        process.kill()
    assert "Traceback" not in (tmp_path / "err").read_text()


async def test_hostile_frames_on_a_websocket_get_errors_and_the_connection_goes_on(tmp_path: Path):
    async with running_gateway(tmp_path, []) as gateway:
        async with trio_websocket.open_websocket_url(gateway.url()) as ws:
            await ws.send_message(INITIALIZE)
            with trio.fail_after(10):
                replies = [json.loads(await ws.get_message())]
            for text, _, _ in ATTACKS:
                await ws.send_message(text)
            await ws.send_message(PING)
            with trio.fail_after(10):
                while replies[-1].get("id") != 100:
                    replies.append(json.loads(await ws.get_message()))
            check(replies[:-1])


async def test_an_invalid_utf8_text_frame_is_closed_with_1007(tmp_path: Path):
    async with running_gateway(tmp_path, []) as gateway:
        stream = await trio.open_tcp_stream("127.0.0.1", gateway.port)
        async with stream:
            await stream.send_all(
                f"GET /acp?token={TOKEN} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
            )
            answer = b""
            with trio.fail_after(10):
                while b"\r\n\r\n" not in answer:
                    answer += await stream.receive_some(65536)
                assert answer.startswith(b"HTTP/1.1 101")
                payload, mask = b"\xff\xfe bad", b"\x01\x02\x03\x04"
                masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                await stream.send_all(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
                rest = answer.split(b"\r\n\r\n", 1)[1]
                while len(rest) < 4:
                    chunk = await stream.receive_some(65536)
                    assert chunk, "closed without a close frame"
                    rest += chunk
        assert rest[0] == 0x88  # a close frame
        assert struct.unpack("!H", rest[2:4])[0] == 1007
