"""Where campaigns keep the runs that failed, so that the next campaign, on this machine or another,
replays them first: hypothesis's own example databases, named by one string (`--database`), each
campaign's runs under a key of their own (the target's name), since every campaign runs the same function.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote, unquote, urlsplit

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, GitHubArtifactDatabase

from sim.core.errors import ConfigurationError

SECONDS = 5.0
"""How long a database server may take to connect, or to send any piece of a reply."""
_T = TypeVar("_T")


def example_database(where: str | Path) -> Guarded:
    """The database `where` names: `redis://HOST:PORT[/DB]` (shared by CI workers and HypoFuzz nodes;
    needs the `redis` package), `github:OWNER/REPO` (read-only: the database CI uploaded as an artifact,
    `GITHUB_TOKEN` from the environment), or a folder; guarded (see `Guarded`), with a `problem` already
    when it is a folder that cannot be written. `ConfigurationError` saying what is wrong, in one line that
    shows no password."""
    text = str(where)
    if text.startswith(("redis://", "rediss://")):
        return Guarded(_redis(text), _shown(text), secret=_password(text))
    if text.startswith("github:"):
        owner, _, repo = text.removeprefix("github:").partition("/")
        if not owner or not repo or "/" in repo:
            raise ConfigurationError(f"--database {text}: say github:OWNER/REPO")
        return Guarded(GitHubArtifactDatabase(owner, repo), text)
    folder = Path(text).absolute()  # a target that changes the current folder keeps it where it was named
    if folder.exists() and not folder.is_dir():
        raise ConfigurationError(f"--database {text} is a file: it names a folder, redis:// or github:")
    guarded = Guarded(DirectoryBasedExampleDatabase(folder), text)
    existing = next(parent for parent in (folder, *folder.parents) if parent.exists())
    if not os.access(existing, os.W_OK):  # hypothesis would drop every failing run without a word
        why = "it is read-only" if _read_only(existing) else "it is not writable"
        guarded.problem = f"--database {text}: cannot write there ({why}), so failing runs are not kept"
    return guarded


def _read_only(folder: Path) -> bool:
    return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)


def _redis(url: str) -> ExampleDatabase:
    """A Redis database whose every read is bounded (`SECONDS` a piece, no retries), checked once: it
    answers PING and a read of the kind hypothesis makes, within those bounds."""
    shown, secret = _shown(url), _password(url)
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError:
        raise ConfigurationError(f"--database {shown} needs the redis package: pip install redis") from None
    try:
        client = redis.Redis.from_url(
            url, socket_connect_timeout=SECONDS, socket_timeout=SECONDS, retry=Retry(NoBackoff(), 0)
        )
    except ValueError as error:
        raise ConfigurationError(f"--database {shown}: {_masked(error, secret)}") from None
    database = RedisExampleDatabase(client)
    try:
        if client.ping() is not True:
            raise ConfigurationError(f"--database {shown}: the server does not answer PING as Redis does")
        list(database.fetch(b"sim fuzz: is this Redis?"))
    except redis.ConnectionError as error:
        raise ConfigurationError(f"--database {shown}: cannot reach it: {_masked(error, secret)}") from None
    except ConfigurationError:
        raise
    except Exception as error:  # a server that is not Redis makes the client raise anything
        said = f"{type(error).__name__}: {_masked(error, secret)}"
        raise ConfigurationError(
            f"--database {shown}: the server does not answer as Redis does ({said})"
        ) from None
    return database


def _password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None


def _shown(url: str) -> str:
    """A URL without its password."""
    password = _password(url)
    if password is None:
        return url
    return url.replace(f":{password}@", ":***@", 1)


def _masked(error: BaseException, secret: str | None) -> str:
    """`error`'s text in one line, short, with every form of `secret` (a server may say it back) masked."""
    text = " ".join(str(error).split())
    if secret:
        for form in sorted({secret, unquote(secret), quote(secret, safe=""), quote(unquote(secret), safe="")},
                           key=len, reverse=True):  # fmt: skip
            text = text.replace(form, "***")
    return text[:300] + ("..." if len(text) > 300 else "")


class Guarded(ExampleDatabase):
    """`database`, whose failures never reach the campaign (which goes on, its verdict unchanged): the first
    one is kept in `problem`, one line naming the database as `where` shows it and masking `secret`, and
    the database is not used again."""

    def __init__(self, database: ExampleDatabase, where: str, *, secret: str | None = None) -> None:
        super().__init__()
        self.database, self.where, self.secret = database, where, secret
        self.problem: str | None = None
        self.broken = False

    def _guard(self, action: Callable[[], _T], default: _T) -> _T:
        if self.broken:
            return default
        try:
            return action()
        except Exception as error:  # a server or a disk failing mid-campaign: said once, never raised
            self.broken = True
            said = f"{type(error).__name__}: {_masked(error, self.secret)}"
            self.problem = (
                f"--database {self.where} failed ({said}), so it was not used for the rest of the run"
            )
            return default

    def save(self, key: bytes, value: bytes) -> None:
        self._guard(lambda: self.database.save(key, value), None)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self._guard(lambda: list(self.database.fetch(key)), [])

    def delete(self, key: bytes, value: bytes) -> None:
        self._guard(lambda: self.database.delete(key, value), None)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self._guard(lambda: self.database.move(src, dest, value), None)


class Namespaced(ExampleDatabase):
    """`database` with every key under `namespace`: campaigns that run the same test function (one per
    target) keep their failures apart."""

    def __init__(self, database: ExampleDatabase, namespace: str) -> None:
        super().__init__()
        self.database = database
        self.prefix = namespace.encode() + b"\x00"

    def save(self, key: bytes, value: bytes) -> None:
        self.database.save(self.prefix + key, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.database.fetch(self.prefix + key)

    def delete(self, key: bytes, value: bytes) -> None:
        self.database.delete(self.prefix + key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.database.move(self.prefix + src, self.prefix + dest, value)
