"""Routing: which model answers a request (``Hooks.choose_model``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

from ..models import FallbackModel, Model, ModelRequest, ProviderError
from .hook_chain import bail
from .spec import Route

if TYPE_CHECKING:
    from .ports import ActivityPorts


async def choose_model(
    ports: ActivityPorts,
    request: ModelRequest,
    purpose: Literal["step", "summary"],
    attempt: int = 1,
    error: ProviderError | None = None,
) -> Model:
    """The model for ``request``: the ``choose_model`` hook's answer, else
    the spec's. An answer that is not a model raises ``TypeError``."""
    hooks = ports.spec.hooks
    if hooks is None or hooks.choose_model is None:
        return ports.spec.model
    model = await bail(hooks.choose_model, Route(ports.handle, request, purpose, attempt, error))
    if model is None:
        return ports.spec.model
    if not callable(getattr(model, "stream", None)):
        raise TypeError(f"Hooks.choose_model returned {model!r}, not a model")
    return cast(Model, model)  # (it streams: a model by its shape)


def member(model: Model, index: int) -> Model:
    """The model that takes a request at fallback ``index`` (0: the first)."""
    return model.models[index] if isinstance(model, FallbackModel) else model


def fallback_index(model: Model, index: int, error: ProviderError) -> int | None:
    """The fallback index to try once ``model``'s member ``index`` failed
    with ``error`` past its retries; None when the request fails."""
    return model.after(index, error) if isinstance(model, FallbackModel) else None
