"""``agentrio run`` exports its spans when an OTLP endpoint is set."""

from __future__ import annotations

import sys

from agentrio import tracing
from agentrio.messages import AssistantMessage, Text, ToolCall
from agentrio.tracing.otlp import ENDPOINTS, exporting_from_env

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
        "run",
        "Read notes.txt",
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_SERVICE_NAME": "cli-test"},
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


async def test_without_an_endpoint_nothing_is_traced(monkeypatch):
    for name in ENDPOINTS:
        monkeypatch.delenv(name, raising=False)
    async with exporting_from_env() as exporting:
        assert (exporting, tracing.instrumented()) == (False, False)


async def test_an_endpoint_without_the_exporter_installed_is_a_warning_not_a_failure(monkeypatch, caplog):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    async with exporting_from_env() as exporting:
        assert (exporting, tracing.instrumented()) == (False, False)
    [warning] = caplog.records
    assert "opentelemetry-exporter-otlp-proto-http" in warning.getMessage()
