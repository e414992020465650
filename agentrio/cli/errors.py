"""What a command reports as ``agentrio: error: ...``, without a traceback."""

#: The exit status of a usage error: a bad option or argument, or a setting that cannot be.
USAGE = 2


class CommandError(Exception):
    """A mistake to report in one line; the command exits with ``status``
    (1 unless the command documents another code for it)."""

    def __init__(self, message: str, *, status: int = 1) -> None:
        super().__init__(message)
        self.status = status
