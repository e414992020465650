"""The update mapper's cost grows with the answer, not with its square."""

from __future__ import annotations

import time
from pathlib import Path

from agentrio import events as ev
from agentrio.gateway.acp.updates import UpdateMapper
from agentrio.models.events import TextDelta


def answer_events(megabytes: int, delta: int) -> list[ev.Event]:
    """message_start, the deltas of a streamed answer, and no end."""
    ids = {"agent_id": "a", "session_id": "s", "time": 0.0}
    text = "lorem ipsum dolor sit amet, " * (megabytes * 1_000_000 // 28)
    events: list[ev.Event] = [ev.MessageStart(seq=0, role="assistant", **ids)]
    events += [
        ev.MessageUpdate(seq=i + 1, delta=TextDelta(0, text[i : i + delta]), **ids)
        for i in range(0, len(text), delta)
    ]
    return events


def test_mapping_a_3_mb_answer_streamed_in_16_character_deltas_takes_linear_time():
    events = answer_events(3, 16)
    mapper = UpdateMapper(Path("."))
    started = time.process_time()
    for event in events:
        mapper.updates(event)
    # Linear: about 0.3 s of CPU here; appending to one string took 10 s.
    assert time.process_time() - started < 3.0
    # A client attaching mid-answer still gets the whole text so far, once.
    mapper = UpdateMapper(Path("."))
    for event in events[:1000]:
        mapper.updates(event)
    [streamed] = list(mapper.replay(()))
    assert streamed["content"]["text"] == "".join(e.delta.text for e in events[1:1000])


def test_a_running_commands_output_is_shown_as_its_text_and_other_progress_as_json():
    mapper = UpdateMapper(Path("."))
    ids = {"agent_id": "a", "session_id": "s", "time": 0.0, "tool_call_id": "b1", "tool_name": "bash"}
    shown = []
    for seq, progress in enumerate(
        ({"stream": "stdout", "text": "one\n"}, {"stream": "stderr", "text": "two\n"}, {"done": 3})
    ):
        [update] = mapper.updates(ev.ToolExecutionUpdate(seq=seq, progress=progress, **ids))
        shown.append(update["content"][0]["content"]["text"])
    assert shown == ["one\n", "one\ntwo\n", 'one\ntwo\n{"done": 3}']
