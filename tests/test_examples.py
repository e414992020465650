"""The examples run as shipped."""

import importlib.util
import io
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_the_team_example_delegates_steers_and_cancels():
    team = _load("team")
    out = io.StringIO()
    assert await team.main(out) == "completed"
    lines = out.getvalue().splitlines()

    def where(*fragments):
        return next(i for i, line in enumerate(lines) if all(f in line for f in fragments))

    # Both workers ran at once, as children drawn under the lead.
    assert where("lead", "ask_reviewer") < where("    reviewer", "run started")
    assert where("lead", "ask_tester") < where("    tester", "run started")
    assert where("    tester", "run started") < where("    reviewer", "assistant ›")
    # The reviewer was steered mid-run and answered the steer; the tester was cancelled.
    assert (
        where("    reviewer", "inspect parser.py")
        < where("    reviewer", "queued steering")
        < where("    reviewer", "you › Focus")
    )
    assert "■ completed" in lines[where("    reviewer", "■")]
    assert "TOOL_ABORTED" in lines[where("    tester", "✗ run_tests")]
    assert "■ aborted" in lines[where("    tester", "■")]
    # The lead got both outcomes as tool results and finished.
    assert "✓ ask_reviewer" in lines[where("lead", "ask_reviewer", "✓")]
    assert "stopped early (aborted)" in lines[where("lead", "✗ ask_tester")]
    assert "■ run completed" in lines[-1]
