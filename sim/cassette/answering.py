"""Answering requests from a recording: which recorded interaction a request is, or how it differs from the
nearest one. The matching behind `RecordingAnswerer` (in-process replay and `sim serve CASSETTE`).

Requests are matched by method, path and body through an index, so a request's cost does not grow with the
cassette: by their exact bytes first (what our encoder sends is what was recorded), and only on a miss by
canonical JSON (keys sorted, numbers by value). Identical requests are answered in recorded order; each
recorded interaction is answered once a round. With `repeat`, a request that matches only interactions
already played starts a new round (a program run again against a long-running server), as vcrpy's
`allow_playback_repeats` would; without it, the recording is played once.

A compact cassette's request that extends an earlier one is matched without rebuilding it: against the
bytes the client sent for that earlier request, with the addition put where the recording puts it, so a
request costs the same at turn 10,000 as at turn 10 (no history re-read or re-hashed per request). Canonical
matching and the nearest request of a miss look among the requests written in full and a few compact ones
likely to come next (those extending what was just played, the first ones waiting), never rebuilding the
whole file.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass

from sim.cassette.matching import body_difference, canonical
from sim.cassette.reader import RecordedInteraction
from sim.cassette.writer import without_layout
from sim.wire.azure_paths import below_base

_Key = tuple[str, str, str | bytes]


@dataclass(frozen=True, slots=True)
class Miss:
    """A request that matched nothing: where it first differs from the nearest recorded request."""

    turn: int
    difference: str
    recorded_body: str
    body_now: str
    where: str
    """Where it differs: the JSON path of the first difference (or the whole difference when there is none
    to point at, a route not recorded say)."""

    def __str__(self) -> str:
        return f"turn {self.turn}: {self.difference}"


def _shared_start(one: str, other: str) -> int:
    """How many leading characters two texts share (by halving, so each comparison runs at C speed)."""
    low, high = 0, min(len(one), len(other))
    while low < high:
        middle = (low + high + 1) // 2
        if one[:middle] == other[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _route(method: str, path: str) -> tuple[str, str]:
    # the path below its base: a recording made at OpenAI's URL answers an Azure OpenAI client, and back
    return method.upper(), below_base(path)


def _shown(method: str, path: str) -> str:
    return f"{method.upper()} {path.rstrip('/')}"


class RecordedAnswers:
    """The interactions of a recording, each handed out once, to the request that matches it."""

    OPEN = 8
    """Earlier requests (the newest first) whose extensions a request is compared with."""
    LIKELY = 8
    """Compact requests waiting first on a route that a request is compared with, rebuilt, on a miss."""

    def __init__(self, interactions: Sequence[RecordedInteraction], *, repeat: bool = False) -> None:
        self.interactions = list(interactions)
        self.repeat = repeat
        self._exact: dict[_Key, deque[int]] = defaultdict(deque)
        self._children: dict[int, deque[int]] = defaultdict(deque)
        positions = self._positions = {id(item.request): n for n, item in enumerate(self.interactions)}
        for position, interaction in enumerate(self.interactions):
            extended = interaction.request.extended
            if extended is not None and extended.tail is not None and id(extended.base) in positions:
                self._children[positions[id(extended.base)]].append(position)
        self._index()
        self._canonical: dict[_Key, deque[int]] | None = None
        self._sent: dict[int, bytes] = {}
        """What the client sent for each played request whose extensions are still to come."""
        self._tails: dict[int, bytes] = {}
        self.played: set[int] = set()
        """The interactions played in this round."""
        self._digests: set[tuple[str, str, bytes]] = set()
        """What was sent for the compact requests played this round (a round starts again on one)."""
        self.ever_played: set[int] = set()
        self.rounds = 1
        self.misses: list[Miss] = []

    def _index(self) -> None:
        """Index every request that is not an extension by its exact bytes (as its file writes them)."""
        for position, interaction in enumerate(self.interactions):
            request = interaction.request
            if request.extended is None:
                stored = (request.stored_body or b"").decode(
                    "utf-8", errors="replace"
                )  # not kept: bodies are big
                text = without_layout(stored).encode("utf-8")
                self._exact[(*_route(request.method, request.path), text)].append(position)

    def _take(self, index: dict[_Key, deque[int]], key: _Key) -> int | None:
        waiting = index.get(key)
        while waiting:
            position = waiting.popleft()
            if position not in self.played:
                return position
        return None

    def _canonical_index(self) -> dict[_Key, deque[int]]:
        """The requests written in full, by canonical JSON (compact ones are not rebuilt for it)."""
        if self._canonical is None:
            self._canonical = defaultdict(deque)
            for position, interaction in enumerate(self.interactions):
                request = interaction.request
                if request.extended is None:
                    key = (*_route(request.method, request.path), canonical(request.body))
                    self._canonical[key].append(position)
        return self._canonical

    def _likely(self, route: tuple[str, str]) -> list[int]:
        """The compact requests on `route` likely to come next, not played: those extending the requests
        just played, then the first ones waiting."""
        children = [
            child
            for base in list(self._sent)[-self.OPEN :][::-1]
            for child in self._children[base]
            if child not in self.played
        ]
        waiting = (
            p
            for p, item in enumerate(self.interactions)
            if item.request.extended is not None and p not in self.played
        )
        first = [p for p, _ in zip(waiting, range(self.LIKELY), strict=False)]
        return [p for p in dict.fromkeys([*children, *first]) if self._route_of(p) == route]

    def _extension(self, route: tuple[str, str], body: bytes) -> int | None:
        """The first unplayed extension of a recently played request that `body` is, byte for byte."""
        for base in list(self._sent)[-self.OPEN :][::-1]:
            sent = self._sent[base]
            for child in self._children[base]:
                if child in self.played:
                    continue
                request = self.interactions[child].request
                extended = request.extended
                assert extended is not None and extended.tail is not None
                if _route(request.method, request.path) != route:
                    continue
                tail = self._tails.get(id(extended.tail))
                if tail is None:
                    tail = self._tails[id(extended.tail)] = without_layout(extended.tail).encode("utf-8")
                add = without_layout(extended.add).encode("utf-8")
                cut = len(sent) - len(tail)
                if (
                    cut >= 0
                    and len(body) == len(sent) + len(add)
                    and body.endswith(tail)
                    and sent.endswith(tail)
                    and body[cut : cut + len(add)] == add
                    and body.startswith(sent[:cut])  # one copy and a memcmp: C speed, however long
                ):
                    return child
        return None

    def _played(self, position: int, body: bytes) -> None:
        self.played.add(position)
        if self.repeat and self.interactions[position].request.extended is not None:
            self._digests.add((*self._route_of(position), hashlib.blake2b(body).digest()))
        self.ever_played.add(position)
        if self._children.get(position):
            self._sent[position] = body
        extended = self.interactions[position].request.extended
        base = self._positions.get(id(extended.base)) if extended is not None else None
        if base in self._sent and all(child in self.played for child in self._children[base]):
            del self._sent[base]

    def match(self, method: str, path: str, body: bytes) -> RecordedInteraction | Miss:
        """The recorded interaction this request is (now played), or the `Miss` saying how it differs."""
        route = _route(method, path)
        position = self._find(route, body)
        if position is None and self.repeat and self.played and self._was_played(route, body):
            self._new_round()
            position = self._find(route, body)
        if position is None:
            miss = self._miss(route, body, _shown(method, path))
            self.misses.append(miss)
            return miss
        self._played(position, body)
        return self.interactions[position]

    def _find(self, route: tuple[str, str], body: bytes) -> int | None:
        # an extension first, when one may come: comparing bytes runs faster than hashing them
        position = self._extension(route, body) if self._sent else None
        if position is None:
            position = self._take(self._exact, (*route, body))
        if position is None:
            now = canonical(body)
            position = self._take(self._canonical_index(), (*route, now))
            if position is None:
                likely = self._likely(route)
                position = next((p for p in likely if self._canonical_of(p) == now), None)
        return position

    def _canonical_of(self, position: int) -> str:
        return canonical(self.interactions[position].request.body)

    def _was_played(self, route: tuple[str, str], body: bytes) -> bool:
        """Whether `body` is a request of this round that was already answered (not a changed one)."""
        now = canonical(body)
        return (
            any(
                self._route_of(p) == route and self._canonical_of(p) == now
                for p in self.played
                if self.interactions[p].request.extended is None
            )
            or (*route, hashlib.blake2b(body).digest()) in self._digests
        )

    def _new_round(self) -> None:
        """Every interaction may be played again (each round's matching starts afresh)."""
        self.played.clear()
        self._digests.clear()
        self._sent.clear()
        self._exact.clear()
        self._canonical = None
        self._index()
        self.rounds += 1

    def _miss(self, route: tuple[str, str], body: bytes, shown: str) -> Miss:
        """How `body` differs from the nearest recorded request not played yet: on the same route, the one
        sharing the longest start of canonical JSON with it (the earliest of equals)."""
        turn = len(self.played) + 1
        everything = range(len(self.interactions))
        waiting = [p for p in everything if p not in self.played]
        played_all = f"all {len(self.interactions)} were played"
        same_route = [p for p in waiting if self._route_of(p) == route] or [
            p for p in everything if self._route_of(p) == route
        ]
        if not same_route:
            requests = [self.interactions[p].request for p in waiting or everything]
            recorded = ", ".join(sorted({_shown(request.method, request.path) for request in requests}))
            said = f"{shown} is not recorded ({'waiting' if waiting else 'recorded'}: {recorded})"
            return Miss(turn, said, "", body.decode("utf-8", "replace"), where=said)
        now = canonical(body)
        full = [p for p in same_route if self.interactions[p].request.extended is None]
        candidates = list(dict.fromkeys([*self._likely(route), *full])) or same_route[: self.LIKELY]
        nearest = max(candidates, key=lambda p: (_shared_start(self._canonical_of(p), now), -p))
        recorded_body = self.interactions[nearest].request.body
        found = body_difference(recorded_body, body)
        if found is not None:
            where, said = found
            said = said if waiting else f"{said} ({played_all})"
        else:
            held = "bodies are equal" if waiting else f"a request the cassette does not hold ({played_all})"
            where = said = held
        recorded = (recorded_body or b"").decode("utf-8", "replace")
        return Miss(turn, said, recorded, body.decode("utf-8", "replace"), where=where)

    def _route_of(self, position: int) -> tuple[str, str]:
        request = self.interactions[position].request
        return _route(request.method, request.path)

    def unplayed(self) -> list[RecordedInteraction]:
        """The recorded interactions never asked for in any round, in recorded order."""
        return [item for position, item in enumerate(self.interactions) if position not in self.ever_played]
