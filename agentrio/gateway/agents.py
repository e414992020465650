"""What a gateway session's agent is made of, from the command's options."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import attrs

from ..actors import AgentSpec
from ..models import from_string
from ..models.model_string import PROVIDERS
from ..tools.builtin import coding_tools
from ..tools.permissions import PRESETS
from ..tools.sandbox import Sandbox, SandboxUnavailable
from ..tools.todo import todo_tool

PERMISSIONS = tuple(PRESETS)

SYSTEM_PROMPT = """\
You are a coding agent working in the directory {cwd}. Use the tools to look \
before you change anything, keep changes small, and say briefly what you did."""


class SpecError(ValueError):
    """The options cannot make an agent (no model, a bad --spec)."""


@attrs.frozen
class AgentFactory:
    """``factory(cwd) -> AgentSpec``: with ``spec`` (``MODULE:ATTR``), the
    user's ``AgentSpec``, or what their callable returns for ``cwd``;
    otherwise an agent on ``model`` with the built-in coding tools rooted
    at ``cwd`` (their commands run in ``sandbox``) and the ``todo``
    planning tool. ``permission`` applies to both."""

    model: str | None = None
    base_url: str | None = None
    permission: str = "ask"
    spec: str | None = None
    sandbox: Sandbox | None = None

    def check(self) -> None:
        """Fail now, with a clear message, rather than at the first session."""
        if self.permission not in PRESETS:
            raise SpecError(f"--permission must be one of {', '.join(PERMISSIONS)}")
        if self.sandbox is not None:
            try:
                self.sandbox.confine(Path.cwd())
            except SandboxUnavailable as exc:
                raise SpecError(str(exc)) from None
        if self.spec is None:
            self._model()
        else:
            self._user_spec()

    def __call__(self, cwd: Path) -> AgentSpec:
        policy = PRESETS[self.permission]
        if self.spec is not None:
            found = self._user_spec()
            spec = found if isinstance(found, AgentSpec) else found(cwd)
            if not isinstance(spec, AgentSpec):
                raise SpecError(f"{self.spec} returned {spec!r}, not an AgentSpec")
            return spec if spec.permission is not None else attrs.evolve(spec, permission=policy)
        return AgentSpec(
            "agentrio",
            self._model(),
            system_prompt=SYSTEM_PROMPT.format(cwd=cwd),
            tools=[*coding_tools(cwd, sandbox=self.sandbox), todo_tool()],
            permission=policy,
        )

    def _model(self) -> Any:
        if not self.model:
            raise SpecError(
                "no model: give --model provider:model, set $AGENTRIO_MODEL, or give --spec MODULE:ATTR"
            )
        return self.model_for(self.model)

    def model_for(self, name: str) -> Any:
        """The model adapter of ``name`` (``provider:model``), at the base
        URL given when it is of the configured model's provider (a URL is
        one provider's); ``SpecError`` for a name that makes none."""
        options: dict[str, Any] = {}
        prefix = name.partition(":")[0]
        if self.base_url and prefix == (self.model or "").partition(":")[0]:
            options["base_url"] = self.base_url
            if prefix in PROVIDERS and not os.environ.get(PROVIDERS[prefix][1]):
                options["api_key"] = None  # a compatible local server may need none
        try:
            return from_string(name, **options)
        except ValueError as exc:
            raise SpecError(str(exc)) from None

    def _user_spec(self) -> Any:
        module_name, _, attribute = (self.spec or "").partition(":")
        if not module_name or not attribute:
            raise SpecError(f"--spec takes MODULE:ATTR, got {self.spec!r}")
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            raise SpecError(f"--spec {self.spec}: {exc}") from None
        if not isinstance(found, AgentSpec) and not callable(found):
            raise SpecError(f"--spec {self.spec} is neither an AgentSpec nor a callable")
        return found
