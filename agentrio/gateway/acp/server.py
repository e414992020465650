"""The ACP agent side of one client connection."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .commands import available_commands_update, command_of, run_command
from .jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, Peer, Reply, RpcError, Transport
from .modes import MODE_OPTION, MODEL_OPTION, SANDBOX_OPTION
from .sessions import SESSION_HELD, Session, SessionHub, prompt_content
from .updates import text_block

if TYPE_CHECKING:
    from .remote import RemoteSession

PROTOCOL_VERSION = 1


def _version() -> str:
    try:
        return version("agentrio")
    except PackageNotFoundError:
        return "0"


KIND_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "an object"}


def _param(params: dict[str, Any], name: str, kind: type, default: Any = ...) -> Any:
    """``params[name]``, which must be a ``kind`` (or missing, or null, when
    there is a ``default``)."""
    value = params.get(name)
    if value is None and default is not ...:
        return default
    if not isinstance(value, kind) or isinstance(value, bool):
        raise RpcError(INVALID_PARAMS, f"{name} must be {KIND_NAMES[kind]}")
    return value


class AcpConnection:
    """Serves the ACP methods to one client. Sessions are shared through the
    hub: a client works on the sessions it created or loaded, and leaving
    detaches it without stopping them."""

    def __init__(self, hub: SessionHub, transport: Transport, **peer_options: Any) -> None:
        self.hub = hub
        self.peer = Peer(transport, self._handle, **peer_options)
        self._attached: dict[str, Session | RemoteSession] = {}
        #: Whether the client offered to read and write files for its sessions.
        self._offers_files = False
        #: Whether it offered to run the sessions' commands in its terminals.
        self._offers_terminals = False
        #: Whether ``initialize`` succeeded: every other method waits for it.
        self._initialized = False
        self._methods = {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/load": self.load_session,
            "session/list": self.list_sessions,
            "session/resume": self.resume_session,
            "session/fork": self.fork_session,
            "session/close": self.close_session,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
            "session/prompt": self.prompt,
            "session/cancel": self.cancel,
            "_agentrio/steer": self.steer,
            "_agentrio/followup": self.followup,
            "_agentrio/session/delete": self.delete_session,
            "_agentrio/session/rename": self.rename_session,
        }

    async def run(self) -> None:
        try:
            await self.peer.run()
        finally:
            for session in self._attached.values():
                session.detach(self.peer)

    async def _handle(self, method: str, params: Any) -> Any:
        try:
            handler = self._methods[method]
        except KeyError:
            raise RpcError(METHOD_NOT_FOUND, f"unknown method {method!r}") from None
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, f"the params of {method} must be an object")
        if not self._initialized and handler != self.initialize:
            raise RpcError(INVALID_REQUEST, f"{method} before initialize: call initialize first")
        return await handler(params)

    def _session(self, params: Any) -> Session | RemoteSession:
        session_id = _param(params, "sessionId", str)
        if (session := self._attached.get(session_id)) is None:
            self.hub.get(session_id)  # says whether it exists at all
            raise RpcError(INVALID_PARAMS, f"session {session_id!r} is not loaded on this connection")
        return session

    def _local(self, params: Any) -> Session:
        """The session of ``params``, run here: a session another host holds
        has its mode, model and commands there."""
        session = self._session(params)
        if not isinstance(session, Session):
            raise RpcError(INVALID_PARAMS, f"session {session.id!r} runs on another host; change it there")
        return session

    # -- methods ----------------------------------------------------------------

    async def initialize(self, params: Any) -> dict[str, Any]:
        _param(params, "protocolVersion", int)
        capabilities = _param(params, "clientCapabilities", dict, {})
        fs = capabilities.get("fs")
        self._offers_files = (
            isinstance(fs, dict) and fs.get("readTextFile") is True and fs.get("writeTextFile") is True
        )
        self._offers_terminals = capabilities.get("terminal") is True
        self._initialized = True
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
                "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "fork": {}},
            },
            "agentInfo": {"name": "agentrio", "title": "agentrio", "version": _version()},
            "authMethods": [],
        }

    async def authenticate(self, params: Any) -> dict[str, Any]:
        return {}

    def _cwd(self, params: dict[str, Any]) -> Path:
        return self.hub.workspace(_param(params, "cwd", str, ""))

    async def new_session(self, params: Any) -> Reply | dict[str, Any]:
        cwd = self._cwd(params)
        session = await self.hub.new(cwd, _param(params, "mcpServers", list, []), self.peer)
        return await self._attach(session, replay=False, result={"sessionId": session.id})

    async def load_session(self, params: Any) -> Reply | dict[str, Any]:
        return await self._load(params, replay=True)

    async def resume_session(self, params: Any) -> Reply | dict[str, Any]:
        """``session/load`` without the history."""
        return await self._load(params, replay=False)

    async def _load(self, params: Any, *, replay: bool) -> Reply | dict[str, Any]:
        session_id = _param(params, "sessionId", str)
        cwd = self._cwd(params)
        try:
            session = await self.hub.load(session_id, cwd, _param(params, "mcpServers", list, []), self.peer)
        except RpcError as exc:
            if exc.code == SESSION_HELD:
                # Another process writes it: the client may still read it, before the error.
                if replay:
                    self.peer.send_stream(await self.hub.history(session_id, cwd))
                exc.data = {**(exc.data or {}), "readOnly": True}
            raise
        return await self._attach(session, replay=replay)

    async def fork_session(self, params: Any) -> Reply | dict[str, Any]:
        """A new session with a copy of the history of ``sessionId`` (which
        need not be loaded on this connection)."""
        source = _param(params, "sessionId", str)
        cwd = self._cwd(params)
        session = await self.hub.fork(source, cwd, _param(params, "mcpServers", list, []), self.peer)
        return await self._attach(session, replay=False, result={"sessionId": session.id})

    async def close_session(self, params: Any) -> dict[str, Any]:
        session = self._session(params)
        del self._attached[session.id]
        if isinstance(session, Session):
            await self.hub.close(session, self.peer)
        else:
            session.detach(self.peer)
        return {}

    async def _attach(
        self, session: Session | RemoteSession, *, replay: bool, result: dict[str, Any] | None = None
    ) -> Reply | dict[str, Any]:
        """Attach ``session``; the answer holds its modes and options, and is
        followed by its commands and its usage. (A session another host holds
        has none of its own here: those are the holder's.)"""
        await session.attach(
            self.peer, replay=replay, files=self._offers_files, terminals=self._offers_terminals
        )
        self._attached[session.id] = session
        if not isinstance(session, Session):
            return result or {}

        def then() -> None:
            session.tell(self.peer, available_commands_update())
            session.tell(self.peer, session.usage_update())

        return Reply({**(result or {}), **session.setup_state()}, then)

    async def set_mode(self, params: Any) -> dict[str, Any]:
        self._local(params).set_mode(_param(params, "modeId", str))
        return {}

    async def set_config_option(self, params: Any) -> dict[str, Any]:
        session = self._local(params)
        option = _param(params, "configId", str)
        value = params.get("value")
        if not isinstance(value, str):
            raise RpcError(INVALID_PARAMS, f"the value of {option} must be a string")
        if option == MODE_OPTION:
            session.set_mode(value)
        elif option == MODEL_OPTION:
            await session.set_model(value)
        elif option == SANDBOX_OPTION:
            await session.set_sandbox(value)
        else:
            offered = ", ".join(o["id"] for o in session.config_options())
            raise RpcError(INVALID_PARAMS, f"no option {option!r}; the options are {offered}")
        return {"configOptions": session.config_options()}

    async def delete_session(self, params: Any) -> dict[str, Any]:
        session_id = _param(params, "sessionId", str)
        await self.hub.delete(session_id)
        if (session := self._attached.pop(session_id, None)) is not None:
            session.detach(self.peer)
        return {}

    async def rename_session(self, params: Any) -> dict[str, Any]:
        title = await self.hub.rename(_param(params, "sessionId", str), _param(params, "title", str))
        return {"title": title}

    async def list_sessions(self, params: Any) -> dict[str, Any]:
        return {"sessions": await self.hub.listing()}

    async def prompt(self, params: Any) -> dict[str, Any]:
        session = self._session(params)
        text = prompt_content(params.get("prompt"))
        if (found := command_of(text)) is not None:
            session = self._local(params)
            answer = await run_command(*found, session, self.hub)
            session.tell(self.peer, {"sessionUpdate": "agent_message_chunk", "content": text_block(answer)})
            return {"stopReason": "end_turn"}
        return {"stopReason": await session.prompt(text, self.peer)}

    async def cancel(self, params: Any) -> None:
        await self._session(params).cancel()

    async def steer(self, params: Any) -> dict[str, Any]:
        session = self._session(params)
        return {"inputId": await session.steer(prompt_content(params.get("prompt")), self.peer)}

    async def followup(self, params: Any) -> dict[str, Any]:
        session = self._session(params)
        return {"inputId": await session.followup(prompt_content(params.get("prompt")), self.peer)}
