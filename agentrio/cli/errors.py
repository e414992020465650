"""What a command reports as ``agentrio: error: ...``, without a traceback."""


class CommandError(Exception):
    pass
