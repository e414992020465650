"""Tracing switched on by the standard OpenTelemetry environment variables,
for the command line."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from . import instrument, uninstrument

log = logging.getLogger("agentrio")

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
#: The conventions' switch for content capture.
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


@asynccontextmanager
async def exporting_from_env() -> AsyncIterator[bool]:
    """While the block runs, export spans over OTLP/HTTP when an OTLP
    endpoint is set in the environment and the SDK and its OTLP exporter are
    installed (``opentelemetry-sdk``, ``opentelemetry-exporter-otlp-proto-http``);
    yields whether it does. The exporter reads its own settings (endpoint,
    headers, timeout) from the environment; ``OTEL_SERVICE_NAME`` names the
    service (default ``agentrio``), and
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` records
    content. On exit, tracing stops and the spans still buffered are sent
    (within the exporter's timeout)."""
    environ = os.environ
    if not any(environ.get(name) for name in ENDPOINTS):
        yield False
        return
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        log.warning(
            "an OTLP endpoint is set but %s is not installed, so no spans are exported "
            "(pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http)",
            exc.name,
        )
        yield False
        return
    service = environ.get("OTEL_SERVICE_NAME") or "agentrio"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    # The batch processor's export thread is the SDK's; shutdown() joins it.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    instrument(provider, capture_content=environ.get(CAPTURE_CONTENT, "").lower() == "true")
    try:
        yield True
    finally:
        uninstrument()
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(provider.shutdown)
