"""Where campaigns keep the runs that failed, so that the next campaign, on this machine or another,
replays them first: hypothesis's own example databases, named by one string (`--database`), each
campaign's runs under a key of their own (the target's name), since every campaign runs the same function.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, GitHubArtifactDatabase

from sim.core.errors import ConfigurationError


def example_database(where: str | Path) -> ExampleDatabase:
    """The database `where` names: `redis://HOST:PORT[/DB]` (shared by CI workers and HypoFuzz nodes;
    needs the `redis` package), `github:OWNER/REPO` (read-only: the database CI uploaded as an artifact,
    `GITHUB_TOKEN` from the environment), or a folder. `ConfigurationError` saying what is wrong."""
    text = str(where)
    if text.startswith(("redis://", "rediss://")):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError:
            raise ConfigurationError(
                f"--database {_shown(text)} needs the redis package: pip install redis"
            ) from None
        try:
            client = redis.Redis.from_url(text, socket_connect_timeout=5)
            client.ping()
        except ValueError as error:
            raise ConfigurationError(f"--database {_shown(text)}: {error}") from None
        except redis.RedisError as error:
            raise ConfigurationError(f"--database {_shown(text)}: cannot reach it: {error}") from None
        return RedisExampleDatabase(client)
    if text.startswith("github:"):
        owner, _, repo = text.removeprefix("github:").partition("/")
        if not owner or not repo or "/" in repo:
            raise ConfigurationError(f"--database {text}: say github:OWNER/REPO")
        return GitHubArtifactDatabase(owner, repo)
    if Path(text).exists() and not Path(text).is_dir():
        raise ConfigurationError(f"--database {text} is a file: it names a folder, redis:// or github:")
    return DirectoryBasedExampleDatabase(text)


def _shown(url: str) -> str:
    """A URL without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


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
