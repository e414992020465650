"""Calling user callbacks that may be sync or async."""

import inspect
from collections.abc import Callable
from typing import Any


async def call(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result
