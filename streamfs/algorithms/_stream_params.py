"""Parameters fixed for the length of a stream, shared by every streaming estimator.

A streaming estimator derives values from its parameters when its stream starts (critical
values, the budget, buffers, the class vector's codes) and keeps them. A parameter changed
afterwards (``set_params`` or assignment) is refused by the next step of the stream
(``partial_fit``, ``learn_one``, ... and ``finish``) with a ``ValueError`` naming it, with its
value at the start and now: set it back to go on, or ``fit()`` (or a fresh estimator) starts
over with the new value, as in scikit-learn (``fit`` always starts from the current
parameters, so ``set_params`` + ``fit``, ``clone`` and grid searches are unaffected).

``to_state()`` records the current parameters under ``"params"``, as it always has, and, only
when they differ, the ones the stream started with under ``"stream_params"`` (the same form).
``from_state`` restores the stream with the latter and then sets the former, so a restored copy
behaves as the live one: its next step is refused too, and ``fit`` starts it over with the new
values. States without the key load as before.

>>> import numpy as np
>>> from streamfs.algorithms.saola import SAOLA
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 2, 50)
>>> sel = SAOLA(alpha=0.01).partial_fit(rng.normal(size=(50, 3)), y).set_params(alpha=0.4)
>>> sel.partial_fit(rng.normal(size=(50, 2)))
Traceback (most recent call last):
...
ValueError: SAOLA: parameters changed after the stream started: alpha 0.01 -> 0.4; a stream keeps the parameters it started with: set them back to go on, or fit() (or a fresh estimator) starts over with the new ones
>>> back = SAOLA.from_state(sel.to_state())
>>> back.alpha, back.to_state()["stream_params"]["alpha"]
(0.4, 0.01)
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ._validation import shown

__all__ = ["StreamParamsMixin"]


def _plain(value: Any) -> Any:
    """Numpy scalars as Python ones and arrays as lists, for comparing parameter values."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def _same(a: Any, b: Any) -> bool:
    """Whether two values of a parameter mean the same: equal and of the same type (``1`` and
    ``1.0`` differ: a budget of one feature, a fraction of all), numpy scalars and arrays
    compared as Python values, other objects (random generators) by identity or ``==``."""
    if a is b:
        return True
    if isinstance(a, (np.ndarray, np.generic)) or isinstance(b, (np.ndarray, np.generic)):
        a, b = _plain(a), _plain(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def kept(value: Any) -> Any:
    """A parameter's value as a stream records it: containers copied (a list of classes
    changed in place is a change); other values kept as they are (a random generator is the
    same object)."""
    return copy.deepcopy(value) if isinstance(value, (list, tuple, dict, np.ndarray)) else value


class StreamParamsMixin:
    """Records the parameters when the stream starts, refuses a step after they changed and
    carries both through ``to_state`` / ``from_state`` (see the module docstring).

    Subclasses call :meth:`_begin_stream_params` where their stream starts (and where
    ``from_state`` rebuilds it), :meth:`_check_stream_params` at the start of every step, and
    define :meth:`_state_params`. The record is a learned attribute (``_stream_params_``), so
    the subclasses' resets (``fit``) forget it with the rest.
    """

    def _state_params(self) -> dict:
        """The parameters as ``to_state()`` records them under ``"params"`` (plain data)."""
        raise NotImplementedError

    def _begin_stream_params(self) -> None:
        """Record the current parameters as those of the stream that starts now."""
        self._stream_params_ = {
            k: kept(v) for k, v in self.get_params(deep=False).items()  # type: ignore[attr-defined]
        }

    def _changed_params(self) -> dict[str, tuple[Any, Any]]:
        """``{name: (value at the stream's start, value now)}`` of the parameters changed
        since the stream started (empty before it starts)."""
        started = self.__dict__.get("_stream_params_")
        if started is None:
            return {}
        # the attributes themselves: get_params reads the constructor's signature each time,
        # too slow for a check before every learn_one (set_params sets only these names)
        changed = {}
        for k, v in started.items():
            now = getattr(self, k, None)
            if now is not v and not _same(v, now):
                changed[k] = (v, now)
        return changed

    def _check_stream_params(self) -> None:
        """``ValueError`` naming the parameters changed since the stream started."""
        changed = self._changed_params()
        if changed:
            listed = ", ".join(f"{k} {shown(a)} -> {shown(b)}" for k, (a, b) in changed.items())
            raise ValueError(
                f"{type(self).__name__}: parameters changed after the stream started: {listed}; "
                "a stream keeps the parameters it started with: set them back to go on, or "
                "fit() (or a fresh estimator) starts over with the new ones"
            )

    def _put_stream_params(self, state: dict) -> dict:
        """``state`` with the parameters the stream started with under ``"stream_params"``,
        when they differ from the current ones."""
        if self._changed_params():
            state["stream_params"] = type(self)(**self._stream_params_)._state_params()
        return state

    @staticmethod
    def _stream_params_of(state: dict) -> tuple[dict, dict | None]:
        """``(parameters to restore the stream with, parameters to set afterwards or None)``
        of a ``to_state()`` dict."""
        started = state.get("stream_params")
        if started is None:
            return state["params"], None
        return started, state["params"]

    def _set_later_params(self, later: dict | None) -> None:
        """Set the parameters changed after the stream started on a restored estimator."""
        if later is not None:
            self.set_params(**later)  # type: ignore[attr-defined]
