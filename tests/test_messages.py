import attrs
import pytest
from hypothesis import given

from agentrio import AssistantMessage, Text, ToolCall, ToolResultMessage, Usage, UserMessage
from agentrio.messages import (
    TOOL_RESULT_MISSING,
    Message,
    converter,
    project_tool_protocol,
)
from agentrio.models import ModelRequest, request_problems

from .strategies import agent_histories, histories, messages


def test_stop_reason_defaults_from_content():
    assert AssistantMessage([Text("hi")]).stop_reason == "stop"
    assert AssistantMessage([ToolCall("c", "read", {})]).stop_reason == "tool_use"
    assert AssistantMessage([ToolCall("c", "read", {})], stop_reason="max_tokens").stop_reason == "max_tokens"


def test_tool_calls_lists_the_call_parts_in_order():
    a, b = ToolCall("a", "read", {}), ToolCall("b", "ls", {})
    assert AssistantMessage([Text("x"), a, Text("y"), b]).tool_calls == [a, b]


def test_usage_adds_up():
    total = Usage(1, 2, 3, 4) + Usage(10, 20, 30, 40)
    assert total == Usage(11, 22, 33, 44)
    assert total.total_tokens == 110
    assert hash(total) == hash(Usage(11, 22, 33, 44))
    assert Usage(1, 2, 3, 4).__add__("3") is NotImplemented
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        total.input_tokens = 0  # type: ignore[misc]


@given(messages)
def test_every_message_round_trips_through_json(message):
    data = converter.unstructure(message)
    assert data["role"] == message.role
    assert converter.structure(data, Message) == message


def test_structure_rejects_an_unknown_role_clearly():
    try:
        converter.structure({"role": "system", "content": "x"}, Message)
    except ValueError as e:
        assert "unknown role 'system'" in str(e)
    else:
        raise AssertionError("no error")


def _result(call_id, name="read", text="ok"):
    return ToolResultMessage(call_id, name, [Text(text)])


def test_projection_drops_empty_assistant_messages():
    history = [UserMessage("hi"), AssistantMessage([], stop_reason="aborted"), UserMessage("again")]
    assert project_tool_protocol(history) == [UserMessage("hi"), UserMessage("again")]


def test_projection_drops_blank_text_but_keeps_the_stop_reason():
    message = AssistantMessage([Text(""), ToolCall("c", "read", {})], stop_reason="max_tokens")
    projected = project_tool_protocol([UserMessage("hi"), message, _result("c")])
    assert projected[1] == AssistantMessage([ToolCall("c", "read", {})], stop_reason="max_tokens")


def test_projection_drops_orphan_results():
    history = [UserMessage("hi"), _result("ghost"), AssistantMessage([Text("answer")])]
    assert project_tool_protocol(history) == [UserMessage("hi"), AssistantMessage([Text("answer")])]


def test_projection_moves_results_after_their_call_in_call_order():
    call_a, call_b = ToolCall("a", "read", {}), ToolCall("b", "read", {})
    asking = AssistantMessage([call_a, call_b])
    history = [UserMessage("hi"), asking, UserMessage("interjection"), _result("b"), _result("a")]
    assert project_tool_protocol(history) == [
        UserMessage("hi"),
        asking,
        _result("a"),
        _result("b"),
        UserMessage("interjection"),
    ]


def test_projection_synthesizes_a_result_for_an_unanswered_call():
    call = ToolCall("a", "read", {})
    projected = project_tool_protocol([UserMessage("hi"), AssistantMessage([call])])
    synthesized = projected[-1]
    assert synthesized.tool_call_id == "a" and synthesized.is_error
    assert synthesized.text.startswith(TOOL_RESULT_MISSING)


def test_projection_keeps_the_first_of_duplicate_results():
    asking = AssistantMessage([ToolCall("a", "read", {})])
    projected = project_tool_protocol(
        [UserMessage("hi"), asking, _result("a", text="first"), _result("a", text="second")]
    )
    assert [m.text for m in projected[2:]] == ["first"]


def _unique_call_ids(history):
    seen, unique = set(), []
    for message in history:
        if isinstance(message, AssistantMessage):
            ids = [c.id for c in message.tool_calls]
            if len(set(ids)) < len(ids) or seen.intersection(ids):
                continue
            seen.update(ids)
        unique.append(message)
    return unique


@given(histories)
def test_the_projection_of_any_history_is_provider_valid(history):
    # Providers also require unique call ids, which a history written by an
    # agent always has; the projection is not asked to invent new ones.
    projected = project_tool_protocol(_unique_call_ids(history))
    if projected:
        assert request_problems(ModelRequest("", projected)) == []


@given(histories)
def test_projection_is_idempotent(history):
    once = project_tool_protocol(history)
    assert project_tool_protocol(once) == once


@given(histories)
def test_a_growing_projection_equals_the_full_projection(history):
    from agentrio.messages.protocol import GrowingProjection

    growing = GrowingProjection()
    for i, message in enumerate(history):
        growing.append(message)
        assert growing.messages() == project_tool_protocol(history[: i + 1])


def test_a_growing_projection_stays_incremental_for_an_agent_written_history():
    from agentrio.messages.protocol import GrowingProjection

    asking = AssistantMessage([ToolCall("a", "read", {}), ToolCall("b", "read", {})])
    growing = GrowingProjection(
        [UserMessage("hi"), asking, _result("a"), _result("b"), AssistantMessage([Text("ok")])]
    )
    assert not growing._grown_out
    growing.append(_result("zzz"))  # an orphan: only the full projection knows what to do
    assert growing._grown_out


@given(agent_histories())
def test_an_agent_written_history_is_projected_incrementally(history):
    from agentrio.messages.protocol import GrowingProjection

    growing = GrowingProjection(history)
    assert not growing._grown_out
    assert growing.messages() == project_tool_protocol(history)


def test_a_projection_mirrors_only_the_history_it_grew_from():
    from agentrio.messages.protocol import GrowingProjection

    history = [UserMessage("hi"), AssistantMessage([Text("hello")]), UserMessage("again")]
    growing = GrowingProjection(history)
    assert growing.mirrors(history) and growing.mirrors(list(history))
    assert not growing.mirrors([*history, AssistantMessage([Text("more")])])  # grew without it
    assert not growing.mirrors([UserMessage("summary"), *history[1:]])  # a compaction's new head
    assert not growing.mirrors([*history[:2], UserMessage("again")])  # decoded anew: equal, not the same
    assert GrowingProjection().mirrors([]) and not GrowingProjection().mirrors(history)
