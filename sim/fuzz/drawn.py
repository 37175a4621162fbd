"""Drawn replies as an answerer (`DrawnAnswerer`): no script, each reply drawn when its request arrives,
from what that request offers, up to a bound of requests a run; past it, the run ran away.

Requests are answered in the thread that runs the host's event loop (in a fuzz campaign, the hypothesis
example's own), so `draw` may call `data.draw`. What `draw` raises (hypothesis ending a run) is kept in
`stopped`, for the example to raise once the target is done."""

from __future__ import annotations

from collections.abc import Callable

from sim.core.model import ModelRequest
from sim.core.problems import Problem, ProblemKind
from sim.fuzz.hosted import NotSimulated
from sim.fuzz.terms import BOUND
from sim.host.answers import Answer, ApiError, Received, Refusal
from sim.scenario.answerer import scripted_answer
from sim.scenario.outline import summary
from sim.scenario.schema import Latency, ScriptedReplySpec
from sim.scenario.world import scripted_reply
from sim.wire.requests import Asked

_OVER = ApiError(404, "sim fuzz: this run is over")
_NO_LATENCY = Latency()


class DrawnAnswerer:
    """Each reply drawn by `draw` when its request arrives, up to `bound` requests; past the bound, a 400
    that says the run ran away. What it was asked and answered is kept for the run's judgement."""

    def __init__(
        self, draw: Callable[[Asked], ScriptedReplySpec], bound: int = BOUND, *, judged: bool = True
    ) -> None:
        self.draw = draw
        self.bound = bound
        self.judged = judged
        """Whether a drawn reply that breaks a guarantee of its request is refused as a script mismatch
        (the api profile); without, it is sent as drawn (the hostile profile)."""
        self.closed = False
        """Whether the run is over: every request from now on is told so (a target still retrying)."""
        self.stopped: BaseException | None = None
        """What `draw` raised, which ended the run."""
        self.received = 0
        """Requests received, answered or not."""
        self.requests: list[ModelRequest] = []
        """The requests answered with a drawn reply."""
        self.served: list[tuple[int, ScriptedReplySpec]] = []
        """Each request answered (by its number) with the reply drawn for it."""
        self.problems: list[Problem] = []

    @property
    def finished(self) -> bool:
        """Never: replies are drawn as long as the run asks."""
        return False

    async def answer(self, request: Received) -> Answer:
        """The reply drawn for `request`, the API's refusal of it, or a 400 past the bound."""
        self.received += 1
        asked = request.parsed
        if isinstance(asked, Refusal):
            if asked.problem is not None:
                self.problems.append(asked.problem)
            return asked.error
        if self.closed or self.stopped is not None:
            return _OVER
        number = asked.number
        if number > self.bound:
            message = f"request {number} is past the bound of {self.bound} requests a run"
            runaway = Problem(
                ProblemKind.runaway, number, message, code="sim_fuzz_runaway", said=f"sim fuzz: {message}"
            )
            self.problems.append(runaway)
            return runaway
        try:
            spec = self.draw(asked)
        except NotSimulated as error:  # what the API would send here, sim cannot make up
            message = f"request {number}: not simulated: {error}"
            unsimulated = Problem(ProblemKind.not_simulated, number, message, code="sim_not_simulated")
            self.problems.append(unsimulated)
            return unsimulated
        except BaseException as error:
            self.stopped = error
            return _OVER
        reply = scripted_reply(spec, [call.id or "" for call in spec.tool_calls])
        self.requests.append(asked.decoded)
        self.served.append((number, spec))
        index = len(self.served) - 1
        said = f"reply {index + 1}: {summary(spec)}"
        answer, problems = scripted_answer(
            spec, reply, asked, index=index, latency=_NO_LATENCY, said=said, judged=self.judged
        )
        self.problems += problems
        return answer
