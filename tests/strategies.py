"""Hypothesis strategies for messages and histories."""

from __future__ import annotations

from hypothesis import strategies as st

from agentrio import (
    AssistantMessage,
    Document,
    Image,
    Text,
    Thinking,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

_text = st.text(max_size=20)
_ids = st.sampled_from([f"call_{i}" for i in range(6)])
_json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_arguments = st.dictionaries(
    st.text(max_size=6),
    st.recursive(
        _json_scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=6,
    ),
    max_size=4,
)

texts = st.builds(Text, _text)
thinkings = st.builds(
    Thinking, _text, signature=st.none() | _text, redacted=st.booleans(), id=st.none() | _text
)
tool_calls = st.builds(ToolCall, _ids, st.sampled_from(["read", "write", "bash"]), _arguments)
usages = st.builds(
    Usage,
    *(st.integers(min_value=0, max_value=10_000) for _ in range(4)),
    cost=st.none() | st.floats(min_value=0, max_value=100, allow_nan=False, allow_infinity=False),
)

_png = b"\x89PNG\r\n\x1a\n"
images = st.builds(Image, st.binary(max_size=16).map(lambda tail: _png + tail), st.just("image/png"))
documents = st.builds(
    Document,
    st.text(max_size=16).map(str.encode),
    st.just("text/plain"),
    st.none() | _text,
)
user_messages = st.builds(UserMessage, _text | st.lists(texts | images | documents, max_size=3))
assistant_messages = st.builds(
    AssistantMessage,
    st.lists(texts | thinkings | tool_calls, max_size=4),
    usage=usages,
    model=_text,
    provider=st.sampled_from(["", "openai", "anthropic"]),
    error=st.none() | _text,
) | st.builds(
    AssistantMessage,
    st.lists(texts | tool_calls, max_size=3),
    stop_reason=st.sampled_from(["stop", "tool_use", "max_tokens", "context_overflow", "error", "aborted"]),
)
tool_results = st.builds(
    ToolResultMessage,
    _ids,
    st.sampled_from(["read", "write", "bash"]),
    st.lists(texts | images, max_size=2),
    is_error=st.booleans(),
)
messages = user_messages | assistant_messages | tool_results
histories = st.lists(messages, max_size=12)


@st.composite
def agent_histories(draw):
    """Histories as an agent writes them: each call answered right after
    its assistant message, in call order, ids never reused."""
    history, next_id = [], 0
    for _ in range(draw(st.integers(0, 6))):
        history.append(draw(user_messages))
        for _ in range(draw(st.integers(0, 3))):
            n = draw(st.integers(0, 3))
            ids = [f"id_{next_id + i}" for i in range(n)]
            next_id += n
            parts = draw(st.lists(texts | thinkings, max_size=2)) + [ToolCall(i, "read", {}) for i in ids]
            history.append(AssistantMessage(parts))
            history += [ToolResultMessage(i, "read", draw(st.lists(texts, max_size=1))) for i in ids]
    return history
