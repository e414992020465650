"""Checking that an actor's state changes only in the actor's own tasks."""

from __future__ import annotations

import os

import trio

#: On in the test suite (and wherever ``AGENTRIO_CHECK_OWNERSHIP=1``): every
#: journal write of an agent asserts that it runs in one of the agent's tasks.
CHECKS = os.environ.get("AGENTRIO_CHECK_OWNERSHIP") == "1"


class NotOwner(AssertionError):
    """An actor's state was about to change in a task the actor does not own."""


class OwnedTasks:
    """The tasks an actor owns: its own, and the activity it runs. Calling
    it is the check (a journal's ``guard``: no bound method to hold)."""

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._tasks: set[trio.lowlevel.Task] = set()

    def add(self, task: trio.lowlevel.Task) -> None:
        self._tasks.add(task)

    def discard(self, task: trio.lowlevel.Task) -> None:
        self._tasks.discard(task)

    def __contains__(self, task: trio.lowlevel.Task) -> bool:
        return task in self._tasks

    def __call__(self) -> None:
        if CHECKS and trio.lowlevel.current_task() not in self._tasks:
            raise NotOwner(
                f"{self._owner}: state changed in task {trio.lowlevel.current_task().name!r}, "
                "which the actor does not own; post a message to its mailbox instead"
            )
