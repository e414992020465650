"""A throwaway PostgreSQL cluster for the tests and the bench: ``initdb`` into
a fresh folder, a server listening only on a Unix socket in that folder,
removed when it stops. A run killed from outside (SIGKILL, a ``timeout``)
cannot stop its server, which ``pg_ctl`` has made a daemon: the next start
stops the servers whose owning process is gone. Needs the server binaries (Debian: ``apt-get install
postgresql``); as root, the server runs as the ``postgres`` user, since
PostgreSQL refuses to run as root."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import attrs

#: The folders of the clusters, each holding an ``owner`` file (a pid).
PREFIX = "agentrio-pg-"

#: Where Debian puts the server binaries, newest version first.
DEBIAN_BINARIES = "/usr/lib/postgresql/*/bin"

INSTALL_HINT = (
    "the PostgreSQL server binaries (initdb, pg_ctl) are not installed: "
    "run `apt-get update && apt-get install -y postgresql` (Debian/Ubuntu), "
    "or put a PostgreSQL bin folder on PATH"
)


class ServerMissing(RuntimeError):
    pass


def find_binaries() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl``."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(os.path.realpath(on_path)).parent
    folders = sorted(glob.glob(DEBIAN_BINARIES), key=lambda f: int(Path(f).parent.name), reverse=True)
    for folder in folders:
        if (Path(folder) / "initdb").exists():
            return Path(folder)
    raise ServerMissing(INSTALL_HINT)


@attrs.define
class Cluster:
    """A running server; ``dsn(database)`` connects to one of its databases."""

    folder: Path
    binaries: Path
    user: str | None  # run the server as this user (when we are root)
    options: str = ""  # the server's command-line options
    _databases: itertools.count = attrs.field(factory=lambda: itertools.count(1))

    @classmethod
    def start(cls, *, fsync: bool = True) -> Cluster:
        binaries = find_binaries()
        user = "postgres" if os.geteuid() == 0 else None
        cls.stop_orphans(binaries, user)
        folder = Path(tempfile.mkdtemp(prefix=PREFIX))
        (folder / "owner").write_text(str(os.getpid()))
        if user is not None:
            try:
                entry = pwd.getpwnam(user)
            except KeyError:
                shutil.rmtree(folder)
                raise ServerMissing(
                    "PostgreSQL refuses to run as root and there is no `postgres` user: "
                    "install Debian's postgresql package, which creates it"
                ) from None
            os.chown(folder, entry.pw_uid, entry.pw_gid)
        options = f"-c listen_addresses='' -c unix_socket_directories={folder} -c max_connections=200"
        if not fsync:  # nothing here survives a crash of the machine anyway
            options += " -c fsync=off -c full_page_writes=off"
        cluster = cls(folder, binaries, user, options)
        try:
            cluster._run(
                "initdb", "-D", folder / "data", "-U", "postgres", "--auth=trust", "-E", "UTF8", "-N"
            )
            cluster.start_server()
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cluster

    @classmethod
    def stop_orphans(cls, binaries: Path, user: str | None) -> None:
        """Stop the clusters whose owning process is gone."""
        for owner in Path(tempfile.gettempdir()).glob(f"{PREFIX}*/owner"):
            try:
                os.kill(int(owner.read_text()), 0)
                continue  # its owner runs
            except ProcessLookupError:
                pass
            except (OSError, ValueError):
                continue  # not ours to judge
            orphan = cls(owner.parent, binaries, user)
            try:
                orphan.stop()
            except RuntimeError:
                shutil.rmtree(orphan.folder, ignore_errors=True)  # its server was not running

    def _run(self, program: str, *args: object) -> None:
        result = subprocess.run(
            [self.binaries / program, *map(str, args)],
            check=False,
            user=self.user,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if result.returncode:
            log = self.folder / "log"
            raise RuntimeError(
                f"{program} failed ({result.returncode}):\n{result.stdout}{result.stderr}"
                + (log.read_text() if log.exists() else "")
            )

    def dsn(self, database: str = "postgres") -> str:
        return f"host={self.folder} user=postgres dbname={database}"

    def new_database(self) -> str:
        """The DSN of a new, empty database."""
        name = f"test_{next(self._databases)}"
        self._admin(f"CREATE DATABASE {name}")
        return self.dsn(name)

    def drop_database(self, dsn: str) -> None:
        """Drop a database ``new_database`` made, closing its connections."""
        import psycopg

        name = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        self._admin(f"DROP DATABASE {name} WITH (FORCE)")

    def _admin(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(statement)

    def server_version(self) -> str:
        import psycopg

        with psycopg.connect(self.dsn()) as conn:
            return conn.execute("SHOW server_version").fetchone()[0]

    def start_server(self) -> None:
        """Start the server (again), waiting until it accepts connections."""
        data, log = self.folder / "data", self.folder / "log"
        self._run("pg_ctl", "-D", data, "-l", log, "-w", "-o", self.options, "start")

    def kill_server(self) -> None:
        """Stop the server at once, as a crash would (its data stays)."""
        self._run("pg_ctl", "-D", self.folder / "data", "-m", "immediate", "stop")

    @property
    def socket(self) -> Path:
        """The server's Unix socket."""
        return self.folder / ".s.PGSQL.5432"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", self.folder / "data", "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
