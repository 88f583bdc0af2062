"""The person on the other end: a simulated user the agent can ask for what the request left out.

A task may hold facts back from its first message (which order, the date range, the email on the account). The
agent asks for them with the contract's conversation tool (``ask_user``, ``world_app.tools.conversation``); the
question is a turn of the conversation and the reply comes back as the tool's result. Who answers is a
:class:`SimulatedUser`:

- :class:`ScriptedUser` (the only one built): deterministic, no model. Each held-back fact has topics (words or
  phrases) and the reply the user gives when asked about it. A question gets the replies of every fact whose
  topic it mentions (in the script's order); a question that mentions none gets the default reply. The same
  question always gets the same reply, in any process, so rollouts, the trainer API and MCP serve it alike and a
  trajectory's reward is reproducible.
- An LLM user (a tau2-bench style user simulator) plugs in behind the same interface: ``kind: llm`` in the spec,
  an implementation whose ``reply`` calls a model with the user's persona and facts. See
  ``docs/adr/0006-simulated-user.md``: it is not built here.

The spec is data (JSON): a task version holds it, a frozen release row carries it, an episode is opened with it
(``Episode.simulated_user``), so any process serving the episode answers the same way. No spec: no one is on the
other end, and the tool says so in its result.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

DEFAULT_REPLY = "Sorry, I'm not sure what you need from me. Could you ask me more specifically?"
NO_USER_CODE = "no_user"
NO_USER_MESSAGE = (
    "No one is on the other end to answer: this request is all you get. Work from it and the tools, and say in "
    "your final answer what you could not find out."
)
FACT_KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_WORDS = re.compile(r"[^a-z0-9@#.$-]+")


def _normal(text: str) -> str:
    """Lower case, runs of anything but letters, digits and ``@ # . $ -`` as one space, padded with spaces."""
    return f" {_WORDS.sub(' ', text.lower()).replace('. ', ' ').strip(' .')} "


# --- the spec ----------------------------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ScriptedFact(_Strict):
    """One fact held back from the first message: when a question mentions one of its topics, the reply."""

    key: str = Field(description="A name for the fact (criteria name it): lowercase letters, digits, - and _.")
    topics: list[str] = Field(min_length=1, description="Words or phrases a question about this fact mentions.")
    reply: str = Field(min_length=1, max_length=2000, description="What the user answers when asked about it.")

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not FACT_KEY.match(value):
            raise ValueError("lowercase letters, digits, '-' and '_' only (at most 64)")
        return value

    @field_validator("topics")
    @classmethod
    def _topics(cls, value: list[str]) -> list[str]:
        out = []
        for topic in value:
            words = _normal(str(topic)).strip()
            if len(words) < 3:
                raise ValueError(f"{topic!r}: a topic is a word or phrase of at least 3 characters")
            out.append(words)
        if len(set(out)) != len(out):
            raise ValueError("a topic is listed twice")
        return out

    @field_validator("reply")
    @classmethod
    def _reply(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("required")
        return value.strip()


class SimulatedUserSpec(_Strict):
    """What a task version, a release row and an episode hold of their simulated user (``kind: scripted``)."""

    kind: Literal["scripted"] = "scripted"
    facts: list[ScriptedFact] = Field(min_length=1)
    default_reply: str = Field(DEFAULT_REPLY, min_length=1, max_length=2000)

    @model_validator(mode="after")
    def _unique_keys(self) -> SimulatedUserSpec:
        keys = [f.key for f in self.facts]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise ValueError(f"facts: the key(s) {', '.join(twice)} appear more than once")
        return self


class SimulatedUserInvalid(ValueError):
    """A simulated-user spec refused: ``problems`` maps each field path (``simulated_user.facts.0.key``) to why;
    the message lists them as ``path: why``, joined by "; "."""

    def __init__(self, problems: dict[str, list[str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{path}: {why}" for path, whys in problems.items() for why in whys))


def simulated_user_validate(data: Any) -> dict:
    """The spec as stored (normalised), or ``{}`` for none; raises ``SimulatedUserInvalid`` with every problem."""
    if data in (None, {}, ""):
        return {}
    if not isinstance(data, Mapping):
        raise SimulatedUserInvalid({"simulated_user": ["a mapping with kind, facts and default_reply"]})
    try:
        spec = SimulatedUserSpec.model_validate(dict(data))
    except ValidationError as exc:
        problems: dict[str, list[str]] = {}
        for err in exc.errors(include_url=False):
            path = ".".join(str(p) for p in err["loc"])
            message = err["msg"].removeprefix("Value error, ")
            problems.setdefault(f"simulated_user.{path}" if path else "simulated_user", []).append(message)
        raise SimulatedUserInvalid(problems) from None
    return spec.model_dump(mode="json")


# --- the interface and the scripted user ---------------------------------------------------------------------------


@dataclass(frozen=True)
class UserReply:
    """A reply: its text, and the keys of the held-back facts it gives (empty: none)."""

    text: str
    facts: tuple[str, ...] = ()


class SimulatedUser(Protocol):
    """Anyone who answers the agent's questions within an episode."""

    def reply(self, question: str) -> UserReply:
        """The answer to ``question``: the text the agent reads and the facts it gives away."""
        ...


class ScriptedUser:
    """A user that answers from a script: deterministic, stateless (a question's reply never depends on what was
    asked before)."""

    def __init__(self, spec: SimulatedUserSpec) -> None:
        self.spec = spec

    def facts_asked(self, question: str) -> tuple[str, ...]:
        """The keys of the facts ``question`` mentions a topic of, in the script's order."""
        text = _normal(question or "")
        return tuple(f.key for f in self.spec.facts if any(f" {topic} " in text for topic in f.topics))

    def reply(self, question: str) -> UserReply:
        keys = self.facts_asked(question)
        if not keys:
            return UserReply(self.spec.default_reply, ())
        replies = {f.key: f.reply for f in self.spec.facts}
        return UserReply(" ".join(replies[k] for k in keys), keys)


def simulated_user_of(spec: Mapping[str, Any] | None) -> SimulatedUser | None:
    """The user a stored spec describes, or None when there is none (``{}``)."""
    if not spec:
        return None
    parsed = SimulatedUserSpec.model_validate(dict(spec))
    if parsed.kind == "scripted":
        return ScriptedUser(parsed)
    raise ValueError(f"no simulated user of kind {parsed.kind!r}")  # pragma: no cover (the schema allows scripted)


def facts_disclosed(spec: Mapping[str, Any] | None, question: str) -> tuple[str, ...]:
    """The facts a question made the user of ``spec`` give away (what the judgement reads of a conversation turn)."""
    user = simulated_user_of(spec)
    return user.reply(question).facts if user is not None else ()


# --- the user of the call being served -----------------------------------------------------------------------------

_BOUND: ContextVar[dict | None] = ContextVar("simulated_user_spec", default=None)


@contextmanager
def simulated_user_bound(spec: Mapping[str, Any] | None) -> Iterator[None]:
    """Inside the block the conversation tool answers as the user of ``spec`` (None or ``{}``: no one)."""
    token = _BOUND.set(dict(spec) if spec else None)
    try:
        yield
    finally:
        _BOUND.reset(token)


def simulated_user_current() -> SimulatedUser | None:
    """The user bound now (``simulated_user_bound``), or None."""
    return simulated_user_of(_BOUND.get())


__all__ = [
    "DEFAULT_REPLY",
    "NO_USER_CODE",
    "NO_USER_MESSAGE",
    "ScriptedFact",
    "ScriptedUser",
    "SimulatedUser",
    "SimulatedUserSpec",
    "UserReply",
    "facts_disclosed",
    "simulated_user_bound",
    "simulated_user_current",
    "simulated_user_of",
    "simulated_user_validate",
]
