"""``FallbackModel``: the next model takes a request the one before could not answer.

An agent whose spec's model is a ``FallbackModel`` sends each request to
its first model, with that model's own retries; when the request still
fails with an error retries cannot fix (``falls_back``: a 5xx, a 429, an
overload, a time-out, a broken connection), the same request goes to the
next model, whose retries start afresh, and the agent emits
``model_fallback``. A 4xx that says the request itself is wrong (400,
401, 404, a context overflow) is no reason to fall back: it ends the
request as it would with one model.

Thinking is proof of one provider's reasoning: the request builders replay
it to its own provider only and drop it for another (``history.replayable_parts``).

Outside an agent, ``stream`` falls back the same way, without retries,
as long as the failing model had sent no event yet.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .errors import ProviderError
from .events import StreamError
from .provider_errors import CONTEXT_OVERFLOW
from .request import Model, ModelRequest
from .retry import is_retryable

if TYPE_CHECKING:
    from .events import StreamEvent
    from .output import OutputSpec


def falls_back(error: ProviderError) -> bool:
    """Whether another model may succeed where this one failed: the
    provider (or the way to it) is unwell, not the request."""
    return error.type != CONTEXT_OVERFLOW and is_retryable(error)


def model_name(model: Any) -> str:
    """``provider:model`` for an adapter (``anthropic:claude-sonnet-4-5``),
    else the object's type name."""
    provider, name = getattr(model, "provider", None), getattr(model, "model", None)
    if isinstance(provider, str) and isinstance(name, str):
        return f"{provider}:{name}"
    return type(model).__name__


class FallbackModel:
    """Models in order of preference; ``models[0]`` answers when it can."""

    def __init__(self, first: Model, *others: Model) -> None:
        self.models: tuple[Model, ...] = (first, *others)
        for index, model in enumerate(self.models):
            if not callable(getattr(model, "stream", None)):
                raise TypeError(f"FallbackModel: model {index} is not a model (no stream method): {model!r}")

    def __repr__(self) -> str:
        return f"FallbackModel({', '.join(model_name(m) for m in self.models)})"

    @property
    def context_window(self) -> int | None:
        """The smallest known window of the models: history kept within it
        fits whichever model answers."""
        windows = [w for m in self.models if isinstance(w := getattr(m, "context_window", None), int)]
        return min(windows, default=None)

    def output_problem(self, output: OutputSpec) -> str | None:
        """Why one of the models would refuse to be asked for ``output``."""
        for model in self.models:
            check = getattr(model, "output_problem", None)
            if check is not None and (problem := check(output)):
                return f"{model_name(model)}: {problem}"
        return None

    def after(self, index: int, error: ProviderError) -> int | None:
        """The index of the model to try once model ``index`` failed with
        ``error``, or None when the request fails as it is."""
        return index + 1 if index + 1 < len(self.models) and falls_back(error) else None

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        index = 0
        while True:
            error: ProviderError | None = None
            started = False
            try:
                async with aclosing(self.models[index].stream(request)) as events:
                    async for event in events:
                        if isinstance(event, StreamError) and not started:
                            error = event.error
                            break
                        started = True
                        yield event
            except ProviderError as exc:
                if started:
                    raise
                error = exc
            if error is None:
                return
            following = self.after(index, error)
            if following is None:
                raise error
            index = following
