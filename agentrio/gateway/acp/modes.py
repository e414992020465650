"""A session's modes and configuration options, as ACP shows them.

A session's modes are its permission policies: ``ask`` (ask before a call
with side effects), ``allow`` (run everything), ``read-only`` (refuse side
effects), and, for an agent whose spec brings a policy of its own,
``configured`` (that policy). A client never gets more than the gateway was
started with: under ``read-only`` it has that mode alone, under a policy of
the spec's that one and ``read-only`` (its refusals stand); ``ask`` refuses
nothing the person asked could not allow, so it offers ``allow`` too. Its
configuration options are the mode again
(for clients that show options rather than modes), the model, chosen
among the models of its provider that agentrio knows the price of, and for
the built-in tools the sandbox of their commands, which a client may make
stricter than the gateway's but never looser.
"""

from __future__ import annotations

from typing import Any

import attrs

from ...models import BUILTIN_PRICES
from ...tools.permissions import PRESETS, Policy
from ...tools.sandbox import Sandbox

#: The name and description of each preset mode.
PRESET_MODES: dict[str, tuple[str, str]] = {
    "ask": ("Ask", "Read freely; ask before every call with side effects"),
    "allow": ("Allow", "Run every tool call without asking"),
    "read-only": ("Read only", "Refuse every call with side effects"),
}
#: The mode of an agent whose spec brings its own permission policy.
CONFIGURED = "configured"

MODE_OPTION = "mode"
MODEL_OPTION = "model"
SANDBOX_OPTION = "sandbox"
#: Sandbox modes, loosest first.
SANDBOX_ORDER = ("off", "workspace-write", "read-only")


def model_name(model: Any) -> str:
    """``provider:model`` of a model adapter (``?`` for what it does not say)."""
    return f"{getattr(model, 'provider', '?')}:{getattr(model, 'model', '?')}"


@attrs.define
class SessionModes:
    """The modes a session may be in (id to policy, in the order shown) and
    the one it is in."""

    policies: dict[str, Policy | None]
    current: str

    @classmethod
    def of(cls, policy: Policy | None) -> SessionModes:
        """The modes of a session whose spec has ``policy`` (no policy at
        all is ``allow``), in that one's mode: see the module's docstring."""
        presets: dict[str, Policy | None] = {name: PRESETS[name] for name in PRESET_MODES}
        if policy is None:
            return cls(presets, "allow")
        if policy is PRESETS["read-only"]:
            return cls({"read-only": policy}, "read-only")
        for name, preset in presets.items():
            if preset is policy:
                return cls(presets, name)
        return cls({CONFIGURED: policy, "read-only": PRESETS["read-only"]}, CONFIGURED)

    def _described(self, mode: str) -> tuple[str, str]:
        return PRESET_MODES.get(mode, ("As configured", "The permission policy of the agent's spec"))

    def state(self) -> dict[str, Any]:
        """ACP's ``SessionModeState``."""
        return {
            "currentModeId": self.current,
            "availableModes": [
                {"id": mode, "name": self._described(mode)[0], "description": self._described(mode)[1]}
                for mode in self.policies
            ],
        }

    def option(self) -> dict[str, Any]:
        """The mode as a ``select`` configuration option."""
        return _select(
            MODE_OPTION,
            "Mode",
            "What the agent may do without asking",
            "mode",
            self.current,
            [(mode, *self._described(mode)) for mode in self.policies],
        )


def model_option(current: str, switchable: bool) -> dict[str, Any]:
    """The model as a ``select`` configuration option: ``current``, and when
    ``switchable`` the other priced models of its provider."""
    provider = current.partition(":")[0]
    names = [current]
    if switchable:
        names += sorted(n for n in BUILTIN_PRICES if n.partition(":")[0] == provider and n != current)
    return _select(
        MODEL_OPTION, "Model", "The model that answers", "model", current, [(n, n, None) for n in names]
    )


def _select(
    option_id: str,
    name: str,
    description: str,
    category: str | None,
    current: str,
    values: list[tuple[str, str, str | None]],
) -> dict[str, Any]:
    options = []
    for value, label, about in values:
        option = {"value": value, "name": label}
        if about:
            option["description"] = about
        options.append(option)
    select: dict[str, Any] = {"id": option_id, "name": name, "description": description}
    if category is not None:
        select["category"] = category
    return {**select, "type": "select", "currentValue": current, "options": options}


def sandbox_modes(sandbox: Sandbox | None) -> list[str]:
    """The sandbox modes a session whose gateway runs commands in ``sandbox``
    may choose: that one's and the stricter ones (none stricter than
    ``off`` where no mechanism can enforce a sandbox)."""
    current = "off" if sandbox is None else sandbox.mode
    if sandbox is None and Sandbox.backend() is None:
        return [current]
    return list(SANDBOX_ORDER[SANDBOX_ORDER.index(current) :])


def sandbox_option(current: str, offered: list[str]) -> dict[str, Any]:
    """The sandbox of the built-in tools' commands as a ``select`` option."""
    about = {
        "off": "Commands run with all your rights",
        "workspace-write": "Commands write only in the workspace; no network",
        "read-only": "Commands write nothing; write and edit refuse; no network",
    }
    return _select(
        SANDBOX_OPTION,
        "Sandbox",
        "What the commands the agent runs may write",
        None,  # no category of ACP's fits; a custom one the Python SDK's models would not keep
        current,
        [(mode, mode, about[mode]) for mode in offered],
    )
