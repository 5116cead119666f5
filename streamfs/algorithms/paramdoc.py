"""What each parameter of an estimator means, read from its numpydoc ``Parameters`` section
(``streamfs algorithms NAME``): the docstrings stay the one place the parameters are described.

A class that defers to another (GroupSAOLA: "Parameters are those of :class:`SAOLA`", or an
entry ":class:`GDM`'s parameters") takes the descriptions it lacks from the classes its
docstring names.

>>> from streamfs.algorithms.group_saola import GroupSAOLA
>>> meanings = parameter_meanings(GroupSAOLA)
>>> meanings["alpha"]
"(float) Significance level of Fisher's z test"
>>> meanings["n_bins"]
'(int or None) test="mi" only: if an int, discretise every column into n_bins equal-width bins over its own range before the test, instead of floor()'
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys

#: a Sphinx cross-reference (:class:`~a.b.C`), and what it names
_ROLE = re.compile(r":(?:class|func|meth|attr|mod):`~?([\w.]+)`")
#: an entry's first line: its names (``a`` or ``a, b``), a colon, then the type if any
_ENTRY = re.compile(r"([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*:")
#: a type's ", default 0.2" (or "(default 0.2)")
_DEFAULT = re.compile(r",?\s*\(?default\b[^)]*\)?$")
#: an entry that only refers to another class's parameters (GDMStream's)
_REFERRAL = re.compile(r":class:`[^`]+`'s parameters\.?")


def parameter_meanings(cls: type) -> dict[str, str]:
    """``{parameter: one line}`` for every parameter ``cls``'s docstring describes, or the
    classes it names describe: its type as the docstring gives it (the values a choice
    takes: ``{"fisher_z", "mi"}``), then the first sentence of its description."""
    return {name: (f"({kind}) " if kind else "") + one_line(text)
            for name, (kind, text) in _described(cls, set()).items()}


def _described(cls: type, seen: set[type]) -> dict[str, tuple[str, str]]:
    seen.add(cls)
    doc = inspect.getdoc(cls) or ""
    found = {name: entry for name, entry in _entries(doc).items()
             if not _REFERRAL.fullmatch(entry[1])}
    for target in dict.fromkeys(_ROLE.findall(doc)):  # the classes it defers to, in order
        other = _resolve(target, cls.__module__)
        if other is not None and other not in seen:
            for name, text in _described(other, seen).items():
                found.setdefault(name, text)
    return found


def _entries(doc: str) -> dict[str, tuple[str, str]]:
    """``{name: (type, description)}`` of the ``Parameters`` section of a numpydoc docstring
    (the type as the entry's first line gives it after the colon, "" if none)."""
    lines = doc.splitlines()
    heading = [i for i in range(len(lines) - 1)
               if lines[i].strip() == "Parameters" and _is_rule(lines[i + 1])]
    if not heading:
        return {}
    entries: dict[str, tuple[str, list[str]]] = {}
    names: list[str] = []
    for i in range(heading[0] + 2, len(lines)):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and _is_rule(lines[i + 1]):
            break  # the next section
        if line[:1].strip():  # unindented: a new entry, or the end of the list (an example)
            match = _ENTRY.match(line)
            names = [n.strip() for n in match.group(1).split(",")] if match else []
            kind = _ROLE.sub(lambda m: m.group(1).rpartition(".")[2],
                             line[match.end():].strip()).replace("``", "") if match else ""
            kind = _DEFAULT.sub("", kind)  # the listing shows the default itself
            for name in names:
                entries[name] = (kind, [])
        else:
            for name in names:
                entries[name][1].append(line.strip())
    return {name: (kind, " ".join(" ".join(text).split()))
            for name, (kind, text) in entries.items()}


def _is_rule(line: str) -> bool:
    return set(line.strip()) == {"-"}


def _resolve(target: str, home: str) -> type | None:
    """The class a cross-reference names: dotted, or a name in module ``home``."""
    module, _, name = target.rpartition(".")
    try:
        found = getattr(importlib.import_module(module) if module else sys.modules[home], name)
    except (ImportError, AttributeError, KeyError):
        return None
    return found if inspect.isclass(found) else None


def one_line(text: str) -> str:
    """The first sentence of a description, up to a semicolon outside brackets (the details
    after it), without reStructuredText's markup.

    >>> one_line("Step size ``eta > 0``. Larger steps forget faster.")
    'Step size eta > 0'
    >>> one_line("The budget (``None``: 10%; or an int); more below")
    'The budget (None: 10%; or an int)'
    """
    plain = _ROLE.sub(lambda m: m.group(1).rpartition(".")[2], text).replace("``", "")
    depth = 0
    for i, char in enumerate(plain):
        depth += (char in "([{") - (char in ")]}")
        if depth <= 0 and char in ".;" and plain[i + 1:i + 2] in (" ", ""):
            return plain[:i]
    return plain
