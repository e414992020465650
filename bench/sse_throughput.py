"""SSE decoding and event-mapping throughput, against the official SDKs.

    pip install -e '.[bench]' && python bench/sse_throughput.py

For the largest recorded streams of each provider, in one run:

* "decode": bytes -> server-sent events, our ``SSEDecoder`` against the
  ``SSEDecoder`` of the ``openai`` and ``anthropic`` SDKs;
* "parse": bytes -> typed stream events: our decoder plus the adapter's
  stream mapper (normalized events, what the agent consumes) against the
  SDKs' ``Stream`` (their SSE decoding, JSON, typed event objects).

The body is fed in fixed-size chunks, as network reads would bring it, and
each figure is the best of several timed rounds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentrio.models.anthropic_stream import AnthropicStreamMapper
from agentrio.models.openai_chat_stream import ChatStreamMapper
from agentrio.models.openai_responses_stream import ResponsesStreamMapper
from agentrio.models.sse import SSEDecoder

CORPUS = ROOT / "tests" / "conformance" / "provider-streams"
#: The largest complete (error-free) stream of each wire format, and the
#: largest stream of all for decoding alone.
FILES = {
    "openai-chat": ["04", "06"],
    "openai-responses": ["15", "17"],
    "anthropic": ["26", "21"],
}
DECODE_ONLY = ["11"]
MAPPERS = {
    "openai-chat": ChatStreamMapper,
    "openai-responses": ResponsesStreamMapper,
    "anthropic": AnthropicStreamMapper,
}


def load(file: str) -> tuple[str, bytes]:
    (path,) = CORPUS.glob(f"{file}_*.json")
    recording = json.loads(path.read_text())
    return recording["provider"], recording["response"]["body"].encode()


def chunked(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def best_time(run: Callable[[], int], rounds: int, min_seconds: float) -> tuple[float, int]:
    """Seconds per call (best round) and what one call returned."""
    result = run()
    loops = 1
    while True:  # enough calls per round to be measurable
        start = time.perf_counter()
        for _ in range(loops):
            run()
        if time.perf_counter() - start >= min_seconds:
            break
        loops *= 2
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(loops):
            run()
        best = min(best, (time.perf_counter() - start) / loops)
    return best, result


# --- ours ----------------------------------------------------------------------------


def ours_decode(chunks: list[bytes]) -> int:
    decoder = SSEDecoder()
    count = 0
    for chunk in chunks:
        count += len(decoder.feed(chunk))
    return count + len(decoder.close())


def ours_parse(provider: str, chunks: list[bytes]) -> int:
    decoder = SSEDecoder()
    mapper = MAPPERS[provider]("model", provider)
    count = 0
    for chunk in chunks:
        for sse in decoder.feed(chunk):
            count += len(mapper.feed(sse))
    for sse in decoder.close():
        count += len(mapper.feed(sse))
    return count + len(mapper.finish())


# --- the SDKs -------------------------------------------------------------------------


def sdk_runners():
    """(name, decode(chunks), parse(provider, chunks) or None) for each SDK."""
    import anthropic
    import anthropic._streaming
    import httpx2
    import openai
    import openai._streaming
    from anthropic.types import RawMessageStreamEvent
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent

    openai_client = openai.OpenAI(api_key="bench", base_url="http://127.0.0.1:9/v1")
    anthropic_client = anthropic.Anthropic(api_key="bench", base_url="http://127.0.0.1:9")
    request = httpx2.Request("POST", "http://127.0.0.1:9/stream")

    def response(chunks: list[bytes]):
        return httpx2.Response(
            200, content=iter(chunks), request=request, headers={"content-type": "text/event-stream"}
        )

    def decoder(module) -> Callable[[list[bytes]], int]:
        return lambda chunks: sum(1 for _ in module.SSEDecoder().iter_bytes(iter(chunks)))

    def openai_parse(provider: str, chunks: list[bytes]) -> int | None:
        cast_to = {"openai-chat": ChatCompletionChunk, "openai-responses": ResponseStreamEvent}.get(provider)
        if cast_to is None:
            return None
        stream = openai._streaming.Stream(cast_to=cast_to, response=response(chunks), client=openai_client)
        return sum(1 for _ in stream)

    def anthropic_parse(provider: str, chunks: list[bytes]) -> int | None:
        if provider != "anthropic":
            return None
        stream = anthropic._streaming.Stream(
            cast_to=RawMessageStreamEvent, response=response(chunks), client=anthropic_client
        )
        return sum(1 for _ in stream)

    return [
        (f"openai {openai.__version__}", decoder(openai._streaming), openai_parse),
        (f"anthropic {anthropic.__version__}", decoder(anthropic._streaming), anthropic_parse),
    ]


def row(layer: str, file: str, who: str, size: int, events: int, seconds: float, ours: float | None) -> str:
    line = f"{layer:<6} {file:<3} {who:<17} {size / seconds / 1e6:9.1f} MB/s {events / seconds / 1e3:10.1f} k events/s"
    return line if ours is None else f"{line}   ours is {seconds / ours:5.2f}x as fast"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk-size", type=int, default=512, help="bytes per simulated network read")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-seconds", type=float, default=0.05, help="minimum time of one round")
    args = parser.parse_args()
    sdks = sdk_runners()
    print(f"Python {sys.version.split()[0]}, chunks of {args.chunk_size} bytes, best of {args.rounds} rounds")
    print("'events' are the server-sent events of the body\n")
    all_files = [(f, True) for files in FILES.values() for f in files] + [(f, False) for f in DECODE_ONLY]
    for file, parse_too in all_files:
        provider, body = load(file)
        chunks = chunked(body, args.chunk_size)
        sse_count = ours_decode(chunks)
        print(f"{file} {provider}: {len(body)} bytes, {sse_count} server-sent events")
        ours, _ = best_time(partial(ours_decode, chunks), args.rounds, args.min_seconds)
        print(row("decode", file, "agentrio", len(body), sse_count, ours, None))
        for name, decode, _ in sdks:
            seconds, count = best_time(partial(decode, chunks), args.rounds, args.min_seconds)
            assert count == sse_count, (name, count, sse_count)
            print(row("decode", file, name, len(body), sse_count, seconds, ours))
        if parse_too:
            ours, _ = best_time(partial(ours_parse, provider, chunks), args.rounds, args.min_seconds)
            print(row("parse", file, "agentrio", len(body), sse_count, ours, None))
            for name, _, parse in sdks:
                if parse(provider, chunks) is None:
                    continue
                seconds, _ = best_time(partial(parse, provider, chunks), args.rounds, args.min_seconds)
                print(row("parse", file, name, len(body), sse_count, seconds, ours))
        print()


if __name__ == "__main__":
    main()
