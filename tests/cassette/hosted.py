"""A recording answered in process by the host `sim serve CASSETTE` serves it with, for the tests: an httpx2
ASGI transport stands where the network would be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2

from sim.cassette.reader import Cassette, read_cassette
from sim.cassette.recording_answerer import RecordingAnswerer, recording_host
from sim.host.app import Host


def hosting(cassette: Cassette, *, repeat: bool = True, **options: Any) -> Host[RecordingAnswerer]:
    """The host `sim serve CASSETTE` serves `cassette` with (with `repeat`, a program run again is answered
    again); `options` go to `recording_host`."""
    return recording_host(RecordingAnswerer(cassette.interactions, repeat=repeat), **options)


async def answers_its_recording(path: Path, *, repeat: bool = True) -> None:
    """Each recorded request of the cassette at `path`, asked in recorded order, gets its recorded status and
    body byte for byte; the recording is then all used, with no problem."""
    cassette = read_cassette(path)
    server = hosting(cassette, repeat=repeat)
    transport = httpx2.ASGITransport(app=server.app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://sim") as client:
        for interaction in cassette.interactions:
            request = interaction.request
            response = await client.request(request.method, request.path, content=request.body or b"")
            assert response.status_code == interaction.response.status, (path.name, interaction.index)
            assert response.content == interaction.response.body, (path.name, interaction.index)
    assert server.answerer.consumed and not server.answerer.problems
