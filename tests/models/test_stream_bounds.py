"""What a broken or hostile server can make an adapter hold, and for how long."""

from __future__ import annotations

import pytest

from agentrio.models import ProviderError

from .loopback import Reply, split
from .test_transport import REQUEST, anthropic


async def test_a_line_past_the_adapters_limit_ends_the_stream_as_an_invalid_response(server):
    model = anthropic(server, max_event_bytes=64 * 1024)
    server.reply(Reply(chunks=split(b"data: " + b"x" * 2**20, 4096), hang=True))
    with pytest.raises(ProviderError) as raised:
        async for _ in model.stream(REQUEST):
            pass
    assert raised.value.type == "invalid_response"
    assert "longer than 65536 bytes" in raised.value.message
