"""The game configuration: the Go side's ``env.Options``, one field for one
key of the ``make`` request (PROTOCOL.md).

A field left ``None`` is not sent, so the server's default applies: the
server's defaults are the only defaults, and this module keeps none of its
own. Adding a game option is adding a field here (after the Go ``env``
package and PROTOCOL.md); the environments and the client forward every
field without naming it.
"""

from __future__ import annotations

import dataclasses
import numbers
import typing
from collections.abc import Mapping
from typing import Any

__all__ = ["SpiderConfig"]


@dataclasses.dataclass(frozen=True)
class SpiderConfig:
    """One game configuration, as sent in ``make``; ``None`` is the server's default.

    ``rules``: ``"classic"`` or ``"cardems"``. ``suits``: 1, 2 or 4.
    ``max_steps``: actions before an episode is truncated (negative: no
    limit, though a game is still truncated at 2^30 actions). ``time_per_action_ms``: classic's simulated clock.
    ``face_up_slots``: observation slots per column, 1 to 104. ``obs``: the
    observation encoding, ``"compact"`` (uint8) or ``"float32"``.
    ``shaping``: ``"none"`` or ``"progress"``, potential-based reward
    shaping for a learner of discount ``shaping_gamma``. For the
    integer fields 0 selects the server's default too. The server checks
    the values; this class checks only their types.
    """

    rules: str | None = None
    suits: int | None = None
    max_steps: int | None = None
    time_per_action_ms: int | None = None
    face_up_slots: int | None = None
    obs: str | None = None
    shaping: str | None = None
    shaping_gamma: float | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None:
                continue
            want = _FIELD_TYPES[f.name]
            number = _NUMBERS.get(want)
            if isinstance(v, bool):  # not a number here
                ok = want is bool
            elif number is not None:  # numpy's numbers too
                ok = isinstance(v, number)
            else:
                ok = isinstance(v, want)
            if not ok:
                raise TypeError(f"SpiderConfig.{f.name} must be {want.__name__} or None, got {v!r}")
            if number is not None:
                object.__setattr__(self, f.name, want(v))  # numpy's numbers as Python's

    def to_request(self) -> dict[str, Any]:
        """The fields given (not None), as the ``make`` request carries them."""
        return {f.name: v for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None}

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> SpiderConfig:
        """The configuration a ``make`` reply echoes (fields it lacks stay None)."""
        return cls(**{f.name: spec[f.name] for f in dataclasses.fields(cls) if f.name in spec})

    @classmethod
    def resolve(cls, config: SpiderConfig | Mapping[str, Any] | None = None, **game: Any) -> SpiderConfig:
        """``config`` with the keyword arguments ``game`` laid over it.

        What the environments and :meth:`Client.make` do with their
        ``config`` and ``**game`` arguments: a keyword given replaces that
        field of ``config`` (``dataclasses.replace``); an unknown keyword
        raises TypeError naming it as Python does ("got an unexpected
        keyword argument 'x'"), which tools that pass an optional argument
        test for. ``config`` may also be a mapping of the
        fields (``dataclasses.asdict``'s form, which a gymnasium spec read
        back from JSON holds), checked as keywords are.
        """
        if isinstance(config, Mapping):
            config = cls.resolve(None, **config)
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(game) - set(names))
        if unknown:
            # Python's own wording for the first, which tools test for to
            # drop an argument an env does not take (TorchRL's GymEnv passes
            # frameskip, and drops it on "unexpected keyword argument
            # 'frameskip'").
            more = f" (and {', '.join(map(repr, unknown[1:]))})" if len(unknown) > 1 else ""
            raise TypeError(
                f"got an unexpected keyword argument {unknown[0]!r}{more}: "
                f"unknown game option{'s' if len(unknown) > 1 else ''}; "
                f"the game options (SpiderConfig's fields) are {', '.join(names)}"
            )
        if config is None:
            return cls(**game)
        if not isinstance(config, cls):
            raise TypeError(
                f"config must be a SpiderConfig, a mapping of its fields or None, got {type(config).__name__}"
            )
        return dataclasses.replace(config, **game) if game else config


def _field_types() -> dict[str, type]:
    """Each field's type without its None (str, int, float or bool)."""
    out: dict[str, type] = {}
    for name, hint in typing.get_type_hints(SpiderConfig).items():
        (t,) = [a for a in typing.get_args(hint) if a is not type(None)]
        out[name] = t
    return out


_FIELD_TYPES = _field_types()
_NUMBERS: dict[type, type] = {int: numbers.Integral, float: numbers.Real}
