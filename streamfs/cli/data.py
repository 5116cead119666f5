"""A data file read and checked as the worker would check it, with its algorithm's parameters,
before anything is published (``produce``) or run (``select``): a refusal is one line, exit 2."""

from __future__ import annotations

import warnings
from typing import Any

from streamfs.cli.errors import UsageProblem


def _load_data(source: str, label: str | None, header: bool | None = None,
               n_features: int | None = None, zero_based: bool | str = "auto",
               drop: tuple[str, ...] = ()) -> tuple[Any, Any, list[str] | None, dict]:
    """``(X, y, feature names or None, naming rule)`` of a whole file, or exit 2."""
    from streamfs.producers.errors import InputFileError
    from streamfs.producers.names import load_named

    try:
        return load_named(source, label=label, header=header, n_features=n_features,
                          zero_based=zero_based, drop=drop)
    except InputFileError as exc:
        raise UsageProblem(_said(exc)) from None
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise UsageProblem(f"{exc.filename}: {exc.strerror}") from None


#: how the command line spells the parameters of the Python API that refusals name
#: (:class:`~streamfs.producers.errors.NamesParameter`)
_OPTION_SPELLINGS = {"block_bytes": "--block-bytes",
                     "zero_based": "--zero-based, or without --one-based"}


def _said(exc: BaseException) -> str:
    """``exc``'s message as the command line says it: naming its options where the Python
    API's would name a parameter (``--block-bytes``, not ``block_bytes``)."""
    from streamfs.producers.errors import NamesParameter

    if isinstance(exc, NamesParameter):
        return exc.said_as(_OPTION_SPELLINGS[exc.parameter])
    return str(exc)


def _labels_refused(exc: ValueError, source: str, label: str | None,
                    header: bool | None) -> UsageProblem:
    """A label error of ``source`` naming it and, when no ``label`` was given, the column
    taken as the label in its place: the wrong column is the likely cause."""
    from streamfs.producers.files import label_column_note

    return UsageProblem(f"{source}: {exc}{label_column_note(source, label, header)}" if source
                        else str(exc))


def _check_open(kind: str, algorithm: str, params: dict, *, n_features: int | None = None,
                y: Any = None, X: Any = None, names: Any = None, source: str = "",
                label: str | None = None, header: bool | None = None,
                advise: bool = False, buffer_cap: int | None = None,
                naming: dict | None = None) -> dict:
    """The worker's own checks of an ``open`` and, given the whole data ``X`` of ``source``
    (read with ``label`` and ``header``), of its values (columns shown with their ``names``),
    before anything is published or run (exit 2). ``advise``: warn as the algorithm will at
    the stream's start, for a caller that does not run it (``produce``; ``select`` runs it).
    ``buffer_cap``: the worker's cap on ``max_buffer_bytes`` (``produce``). ``naming``: the
    source's naming rule, which names the columns where it has no names (a LIBSVM file's
    indices as written: its column 1 is feature 2 of a 1-based file)."""
    from streamfs.algorithms.opening import check_open, check_open_data, check_values, open_advice
    from streamfs.algorithms.registry import LabelError
    from streamfs.producers.files import guessed_label_warning, row_id_warnings

    try:
        spec, algo, params = check_open(kind, algorithm, params, n_features=n_features,
                                        buffer_cap=buffer_cap)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    if y is not None:
        try:  # the labels, and what the data's size allows: the data's fault, say whose
            check_open_data(spec, algo, y, buffer_cap=buffer_cap)
        except LabelError as exc:
            raise _labels_refused(exc, source, label, header) from None
        except ValueError as exc:
            raise UsageProblem(f"{source}: {exc}" if source else str(exc)) from None
        for advice in open_advice(algo, y) if advise else []:
            warnings.warn(advice, UserWarning, stacklevel=2)  # one log line (_log_warning)
        if source and (guessed := guessed_label_warning(source, label, header, y, names)):
            warnings.warn(guessed, UserWarning, stacklevel=2)
    if X is not None:
        for said in row_id_warnings(source, X, names) if source else []:
            warnings.warn(said, UserWarning, stacklevel=2)
        if names is None and naming:  # a LIBSVM file's features: their indices as written
            from streamfs.producers.names import RuleNames

            names = RuleNames(naming, X.shape[1])
        try:
            check_values(kind, algo, X, names=names)
        except ValueError as exc:  # the data's fault: say whose
            raise UsageProblem(f"{source}: {exc}" if source else str(exc)) from None
    return params


def _groups(groups_file: str | None, n_columns: int) -> list[list[int]] | None:
    """The groups of ``--groups FILE``, a partition of the data's ``n_columns`` (exit 2)."""
    from streamfs.producers.files import check_groups, read_groups

    if groups_file is None:
        return None
    try:
        groups = read_groups(groups_file)
        check_groups(groups, n_columns, groups_file)
    except ValueError as exc:
        raise UsageProblem(str(exc)) from None
    return groups
