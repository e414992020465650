"""``from_string``: adapters from "provider:model" and the environment."""

from __future__ import annotations

import pytest

from agentrio.models import Anthropic, OpenAIChat, OpenAIResponses, from_string


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def test_openai_chat_from_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-1")
    model = from_string("openai:gpt-4.1")
    assert isinstance(model, OpenAIChat)
    assert (model.model, model.api_key, model.base_url) == ("gpt-4.1", "sk-1", "https://api.openai.com/v1")


def test_base_url_from_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "ollama")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    model = from_string("openai-responses:gpt-oss:20b")
    assert isinstance(model, OpenAIResponses)
    assert (model.model, model.base_url) == ("gpt-oss:20b", "http://localhost:11434/v1")


def test_anthropic_with_options(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy.test")
    model = from_string("anthropic:claude-sonnet-4-5", base_url="http://other.test", max_tokens=1000)
    assert isinstance(model, Anthropic)
    assert (model.api_key, model.base_url, model.max_tokens) == ("sk-ant", "http://other.test", 1000)


@pytest.mark.parametrize(
    "spec, variable",
    [
        ("openai:gpt-4.1", "OPENAI_API_KEY"),
        ("openai-responses:gpt-5", "OPENAI_API_KEY"),
        ("anthropic:claude", "ANTHROPIC_API_KEY"),
    ],
)
def test_missing_key_names_the_variable(spec, variable):
    with pytest.raises(ValueError, match=variable):
        from_string(spec)


def test_an_explicit_key_needs_no_environment():
    assert from_string("anthropic:claude", api_key="k").api_key == "k"


@pytest.mark.parametrize("spec", ["gpt-4.1", "openai:", ":gpt-4.1"])
def test_malformed_spec(spec):
    with pytest.raises(ValueError, match="provider:model"):
        from_string(spec)


def test_unknown_provider_lists_the_known_ones():
    with pytest.raises(ValueError, match="'anthropic', 'openai', 'openai-responses'"):
        from_string("gemini:pro")
