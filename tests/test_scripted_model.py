import json

import pytest
import trio

from agentrio import (
    AssistantMessage,
    ProviderError,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentrio.models import (
    Done,
    MessageAssembler,
    ModelRequest,
    ScriptedModel,
    StreamStart,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
    request_problems,
)
from agentrio.models.assembler import parse_tool_call

from .helpers import counting_switches


async def collect(model, request):
    return [event async for event in model.stream(request)]


def request(*messages, tools=()):
    return ModelRequest("system", list(messages), list(tools))


async def test_a_reply_streams_in_chunks_and_reassembles_exactly():
    reply = AssistantMessage(
        [
            Thinking("let me think about it", signature="sig-123"),
            Text("Here is a fairly long answer."),
            ToolCall("c1", "read", {"path": "src/main.py", "lines": [1, 20]}),
        ],
        usage=Usage(10, 20, 3, 4),
    )
    model = ScriptedModel([reply], chunk_size=5)
    events = await collect(model, request(UserMessage("hi")))
    assert isinstance(events[0], StreamStart) and isinstance(events[-1], Done)
    text_deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(text_deltas) > 1 and all(len(d) <= 5 for d in text_deltas)
    fragments = [e.arguments for e in events if isinstance(e, ToolCallDelta)]
    assert len(fragments) > 1
    with pytest.raises(ValueError):
        json.loads(fragments[0])  # a fragment is partial JSON
    assembler = MessageAssembler()
    for event in events:
        assembler.feed(event)
    assert assembler.message() == AssistantMessage(
        reply.content, usage=reply.usage, model="scripted", provider="scripted"
    )


async def test_requests_are_recorded():
    model = ScriptedModel([AssistantMessage([Text("a")]), AssistantMessage([Text("b")])])
    first = request(UserMessage("one"), tools=[ToolSpec("read", "Read.", {"type": "object"})])
    await collect(model, first)
    assert model.requests == [first]
    assert model.requests[0].system_prompt == "system"
    assert model.requests[0].tools[0].name == "read"
    assert model.remaining == 1


async def test_an_exception_reply_is_raised_for_its_request():
    error = ProviderError(529, "overloaded_error", "busy")
    model = ScriptedModel([error, AssistantMessage([Text("ok")])])
    with pytest.raises(ProviderError) as raised:
        await collect(model, request(UserMessage("hi")))
    assert raised.value is error
    assert (await collect(model, request(UserMessage("hi"))))[-1] == Done("stop", Usage())


async def test_callable_replies_see_the_request_sync_or_async():
    seen = []

    def sync_reply(req):
        seen.append(req.messages[-1].text)
        return AssistantMessage([Text("sync")])

    async def async_reply(req):
        await trio.sleep(1)
        seen.append(req.messages[-1].text)
        return AssistantMessage([Text("async")])

    model = ScriptedModel([sync_reply, async_reply])
    await collect(model, request(UserMessage("first")))
    await collect(model, request(UserMessage("second")))
    assert seen == ["first", "second"]


async def test_running_out_of_replies_is_an_error():
    model = ScriptedModel([])
    with pytest.raises(ProviderError, match="no reply left for request #1"):
        await collect(model, request(UserMessage("hi")))


@pytest.mark.parametrize(
    "messages, problem",
    [
        ([], "at least one message"),
        ([UserMessage("hi"), AssistantMessage([])], "assistant message content must not be empty"),
        ([UserMessage("")], "user message content must not be empty"),
        ([UserMessage("hi"), AssistantMessage([Text("")])], "text content blocks must not be empty"),
        (
            [UserMessage("hi"), AssistantMessage([ToolCall("a", "read", {})]), UserMessage("no result")],
            "tool call 'a' has no result before this message",
        ),
        (
            [UserMessage("hi"), AssistantMessage([ToolCall("a", "read", {})])],
            "tool call 'a' has no result at the end",
        ),
        (
            [UserMessage("hi"), ToolResultMessage("a", "read", [Text("x")])],
            "does not directly follow the assistant message",
        ),
        (
            [
                UserMessage("hi"),
                AssistantMessage([ToolCall("a", "read", {})]),
                UserMessage("between"),
                ToolResultMessage("a", "read", [Text("x")]),
            ],
            "does not directly follow",
        ),
        (
            [
                UserMessage("hi"),
                AssistantMessage([ToolCall("a", "read", {}), ToolCall("a", "read", {})]),
                ToolResultMessage("a", "read", [Text("x")]),
            ],
            "is not unique",
        ),
    ],
)
async def test_strict_mode_rejects_what_a_provider_rejects(messages, problem):
    assert any(problem in p for p in request_problems(request(*messages)))
    model = ScriptedModel([AssistantMessage([Text("unused")])])
    with pytest.raises(ProviderError) as raised:
        await collect(model, request(*messages))
    assert raised.value.status == 400 and problem in raised.value.message
    assert model.remaining == 1  # a rejected request consumes no reply


async def test_lenient_mode_accepts_anything():
    model = ScriptedModel([AssistantMessage([Text("ok")])], strict=False)
    events = await collect(model, request(UserMessage("hi"), AssistantMessage([])))
    assert events[-1] == Done("stop", Usage())


def test_duplicate_tool_names_are_rejected():
    spec = ToolSpec("read", "Read.", {"type": "object"})
    assert request_problems(request(UserMessage("hi"), tools=[spec, spec])) == [
        "tools: the name 'read' is used more than once"
    ]


@pytest.mark.parametrize(
    "raw, arguments, kept",
    [
        ("", {}, None),
        ("  ", {}, None),
        ('{"a": 1}', {"a": 1}, None),
        ("[1]", {}, "[1]"),
        ('{"a": ', {}, '{"a": '),
    ],
)
def test_streamed_arguments_that_are_not_a_json_object_are_kept_raw(raw, arguments, kept):
    call = parse_tool_call("c", "read", raw)
    assert call.arguments == arguments and call.raw_arguments == kept


async def _checkpoints_while_streaming(model: ScriptedModel) -> tuple[int, int]:
    """How often another task ran while ``model`` streamed one reply, and
    how many events the reply was."""
    async with counting_switches() as switches:
        before = switches()
        events = await collect(model, ModelRequest("", [UserMessage("hi")], []))
        after = switches()
    assert isinstance(events[-1], Done)
    return after - before, len(events)


async def test_a_stream_yields_to_other_tasks_between_events_by_default_and_once_with_yield_every_0():
    reply = AssistantMessage([Text("a reply long enough for several chunks")])
    between, count = await _checkpoints_while_streaming(ScriptedModel([reply]))
    assert count > 5 and between >= count - 1
    burst, _ = await _checkpoints_while_streaming(ScriptedModel([reply], yield_every=0))
    assert burst <= 1
    every_4, _ = await _checkpoints_while_streaming(ScriptedModel([reply], yield_every=4))
    assert burst < every_4 < between


@pytest.mark.parametrize("bad", [-1, 1.5, None])
def test_yield_every_must_be_a_non_negative_int(bad):
    with pytest.raises(ValueError, match="yield_every"):
        ScriptedModel([], yield_every=bad)
