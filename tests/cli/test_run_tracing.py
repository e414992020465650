"""``agentrio run`` exports its spans when an OTLP endpoint is set."""

from __future__ import annotations

from agentrio.messages import AssistantMessage, Text, ToolCall

from ..models.loopback import Reply, start_server


async def test_run_exports_its_spans_over_otlp_when_an_endpoint_is_set(cli, nursery):
    collector = await start_server(nursery)
    collector.reply(Reply(content_type="application/x-protobuf", chunks=[b""]))
    (cli.workspace / "notes.txt").write_text("a line\n")
    cli.server.add(
        AssistantMessage([ToolCall("c1", "read", {"path": "notes.txt"})]),
        AssistantMessage([Text("One line.")]),
    )
    term = cli.spawn(
        "run", "Read notes.txt", env={"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_SERVICE_NAME": "cli-test"}
    )
    await term.expect_text("One line.")
    assert await term.wait() == 0
    # The spans still buffered when the run ended went out before the exit.
    [export] = collector.requests
    assert (export.method, export.path) == ("POST", "/v1/traces")
    assert export.headers["content-type"] == "application/x-protobuf"
    for name in (b"invoke_agent agentrio", b"chat fake", b"execute_tool read", b"cli-test"):
        assert name in export.body
    assert b"a line" not in export.body  # no content unless asked for

