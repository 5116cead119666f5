"""Read CSV/TSV files incrementally: numeric feature columns plus one label column.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> _ = p.write_text("a,b,class\\n1,2,yes\\n3,4,no\\n")
>>> r = DelimitedReader(p, label="class")
>>> r.n_features, r.feature_names
(2, ['a', 'b'])
>>> X, y = next(r.chunks())
>>> X.tolist(), y.tolist()
([[1.0, 2.0], [3.0, 4.0]], ['yes', 'no'])
"""

from __future__ import annotations

import csv
import logging
import re
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from streamfs.algorithms._suggest import did_you_mean
from streamfs.producers.errors import InputFileError

log = logging.getLogger(__name__)

#: approximate bytes of parsed features per chunk
DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024
#: UTF-8 wherever the file is read (not the machine's locale); a leading BOM, as in Excel's
#: "CSV UTF-8", is dropped rather than read as part of the first column's name
TEXT_ENCODING = "utf-8-sig"


def is_number(v: str) -> bool:
    """Whether ``float`` accepts the text.

    >>> is_number(" 1e3"), is_number("x"), is_number("")
    (True, False, False)
    """
    try:
        float(v)
        return True
    except ValueError:
        return False


def label_index(header: list[str] | None, label: str | int | None, width: int, path: Path,
                where: str = "in the header", what: str = "label column") -> int:
    """Position of the label column: by header name, else by (possibly negative) index;
    ``where`` the names are, for the error (a Parquet file's are its columns); ``what`` the
    column is, for the error."""
    if label is None:
        return width - 1
    if header is not None and str(label) in header:
        at = header.index(str(label))
        if is_index(label) and -width <= int(label) < width and int(label) % width != at:
            _note(f"{path}: --label {label} is the column named {str(label)!r} (column {at}), "
                  f"not column {label}: a header's names come before indices")
        return at
    try:
        idx = int(label)
    except ValueError:
        where = (where + did_you_mean(label, header) if header is not None
                 else "(the file has no header)")
        raise InputFileError(f"{path}: no {what} named {label!r} {where}") from None
    if not -width <= idx < width:
        raise InputFileError(f"{path}: {what} index {idx} outside 0..{width - 1}")
    return idx % width


def is_index(column: str | int) -> bool:
    """Whether a column given on the command line is an index rather than a name.

    >>> is_index("-1"), is_index(3), is_index("id")
    (True, True, False)
    """
    return str(column).lstrip("-").isdigit()


def feature_columns(names: list[str] | None, label_col: int | None, drop: Sequence[str | int],
                    width: int, path: Path, where: str = "in the header") -> list[int]:
    """The columns read as features: all but the label's (``label_col``, None when the
    labels are kept apart) and those ``drop`` names (by name or index, as ``--label`` does),
    such as a row id that would otherwise be read as a measurement. :class:`InputFileError`
    for a ``drop`` that names no column, names the label, or leaves no feature.

    >>> feature_columns(["id", "a", "b", "class"], 3, ["id"], 4, Path("d.csv"))
    [1, 2]
    >>> feature_columns(["id", "a", "class"], 2, ["class"], 3, Path("d.csv"))
    Traceback (most recent call last):
    ...
    streamfs.producers.errors.InputFileError: d.csv: --drop class: that column is the label; --drop leaves out feature columns (the label is chosen with --label)
    """
    dropped: set[int] = set()
    for column in drop:
        c = label_index(names, column, width, path, where, "column to drop")
        if c == label_col:
            raise InputFileError(f"{path}: --drop {column}: that column is the label; --drop "
                                 "leaves out feature columns (the label is chosen with --label)")
        dropped.add(c)
    kept = [c for c in range(width) if c != label_col and c not in dropped]
    if not kept:
        raise InputFileError(f"{path}: --drop leaves no feature column")
    return kept


def default_label_note(label: str | int | None, names: list[str] | None, width: int,
                       why: str = "") -> str:
    """What to add to an error about the labels, or a feature column, when ``label`` was not
    given: the last column was taken as the label, which the error would not say (a label
    column elsewhere is then read as a feature); ``why`` it looks wrong, if said.

    >>> default_label_note(None, ["a", "class", "b"], 3)
    "; the last column, 2 ('b'), was taken as the label because no --label was given: name the label with --label"
    >>> default_label_note("class", ["a", "class", "b"], 3)
    ''
    """
    if label is not None:
        return ""
    name = f" ({names[-1]!r})" if names else ""
    why = f" ({why})" if why else ""
    return (f"; the last column, {width - 1}{name}, was taken as the label because no --label "
            f"was given{why}: name the label with --label")


def labels_from_text(values: list[str], where: str = "the labels") -> np.ndarray:
    """Numbers become int64 (all integral) or float64; anything else stays text. Integers
    written as such are read exactly (as floats, 9007199254740993 was 9007199254740992, one
    class with it), as uint64 if they need it; integers that no 64-bit type holds together
    are refused (:class:`InputFileError` starting with ``where``), as the Python API refuses
    them.

    >>> labels_from_text(["9007199254740993", "9007199254740992"]).tolist()
    [9007199254740993, 9007199254740992]
    >>> labels_from_text(["1", "2.0", "1e3"]).tolist(), labels_from_text(["0.5", "1"]).dtype
    ([1, 2, 1000], dtype('float64'))
    >>> labels_from_text(["-1", "99999999999999999999"], "d.csv")
    Traceback (most recent call last):
    ...
    streamfs.producers.errors.InputFileError: d.csv: integer labels from -1 to 99999999999999999999, which no 64-bit integer type holds together: map them to smaller classes first
    """
    if values and all(is_number(v) for v in values):
        try:
            ints = [int(v) for v in values]
        except ValueError:  # "2.0", "1e3", "nan": read as floats
            ints = None
        if ints is not None:
            lo, hi = min(ints), max(ints)
            if -2**63 <= lo and hi < 2**63:
                return np.array(ints, dtype=np.int64)
            if lo >= 0 and hi < 2**64:
                return np.array(ints, dtype=np.uint64)
            raise InputFileError(f"{where}: integer labels from {lo} to {hi}, which no 64-bit "
                                 "integer type holds together: map them to smaller classes "
                                 "first")
        arr = np.array([float(v) for v in values])
        integral = np.all(arr == np.round(arr)) and np.all(np.abs(arr) < 2.0**63)
        return arr.astype(np.int64) if integral else arr
    _note_mixed_labels(values, where)
    return np.array(values)


def _note_mixed_labels(values: list[str], where: str) -> None:
    """Warn of labels that are numbers but for a few (or text but for a few): read as text
    they are all classes, so one stray cell ('malignant' among 0s and 1s) is a class of its
    own, which binary learners refuse but the feature-stream selectors take without a word."""
    numbers = [is_number(v) for v in values]
    n, k = len(values), sum(numbers)
    if not 0 < k < n:
        return
    few_numbers = 2 * k < n  # the odd ones out are the numbers, else the texts
    odd = list(dict.fromkeys(v for v, num in zip(values, numbers) if num == few_numbers))
    count = k if few_numbers else n - k
    what = ("a number" if few_numbers else "not a number") if count == 1 else (
        "numbers" if few_numbers else "not numbers")
    examples = ", ".join(map(repr, odd[:3])) + (", ..." if len(odd) > 3 else "")
    _note(f"{where}: {count} of {n} labels {'is' if count == 1 else 'are'} {what} ({examples}) "
          f"where the others are{' not' if few_numbers else ''}: all are read as text, each "
          f"distinct text a class ({len(set(values))} classes); correct or drop those rows if "
          "they are mistakes")


_noted: set[str] = set()


def _note(message: str) -> None:
    """Log ``message`` once per process (a file is often opened twice: data, then names)."""
    if message not in _noted:
        _noted.add(message)
        log.warning(message)


def _numbers_columns(row: list[str]) -> bool:
    """Whether ``row`` reads 0, 1, 2, … (or 1, 2, 3, …): column numbers, not a data row.

    >>> _numbers_columns(["0", "1", "2"]), _numbers_columns(["1", "2", "3"])
    (True, True)
    >>> _numbers_columns(["0", "1", "1"]), _numbers_columns(["0.5", "1", "2"])
    (False, False)
    """
    values = [v.strip() for v in row]
    return any(values == [str(j) for j in range(start, start + len(values))] for start in (0, 1))


def _delimiter_hint(text: str, delimiter: str, value: bool = False) -> str:
    """A hint for ``text`` (a field) that seems to hold another separator than ``delimiter``:
    the delimiter comes from the suffix, so a file of the other kind fails on its first line.
    ``value``: ``text`` is a value that is not a number, which may be one with a decimal
    comma (not so a whole first line: ``1,5`` there is a comma-separated file's).

    >>> _delimiter_hint("a;b;c", ",")
    "; it holds ';': streamfs reads ',' (.csv) and tab (.tsv) separators only: convert the file"
    >>> _delimiter_hint("a\\tb", ","), _delimiter_hint("1.5", ",")
    ('; it holds tabs: name a tab-separated file .tsv', '')
    >>> _delimiter_hint("-1,25", "\\t", value=True)  # not a .csv file: a decimal comma
    "; a decimal comma? Numbers are read with a decimal point ('1.5', not '1,5'): convert the file"
    """
    if value and re.fullmatch(r"\s*[+-]?\d*,\d+(?:[eE][+-]?\d+)?\s*", text):
        return ("; a decimal comma? Numbers are read with a decimal point ('1.5', not '1,5'): "
                "convert the file")
    if delimiter != "\t" and "\t" in text:
        return "; it holds tabs: name a tab-separated file .tsv"
    if delimiter != "," and "," in text:
        return "; it holds ',': name a comma-separated file .csv"
    if ";" in text:
        return ("; it holds ';': streamfs reads ',' (.csv) and tab (.tsv) separators only: "
                "convert the file")
    return ""


def _spans(first: int, last: int) -> str:
    """What an error about a record from line ``first`` to ``last`` adds when they differ: a
    quoted field holds the line breaks, often a quote (\") never closed.

    >>> _spans(3, 3), _spans(2, 40)
    ('', ' (the record runs from line 2 to line 40: a quoted field holds line breaks; a quote (") that is never closed?)')
    """
    if last <= first:
        return ""
    return (f" (the record runs from line {first} to line {last}: a quoted field holds line "
            'breaks; a quote (") that is never closed?)')


def refuse_duplicate_names(names: Sequence[str], where: str, *, skip_empty: bool = False,
                           kind: str = "column") -> None:
    """:class:`InputFileError` naming every name given to two or more columns: results would
    carry two features of that name, and a label named so would be ambiguous (the Python API
    refuses such DataFrame columns too). ``where`` starts the message (the file, and the line
    of a header); ``skip_empty`` leaves empty names to the naming rule (a CSV header's).

    >>> refuse_duplicate_names(["a", "", "b", ""], "d.csv, line 1", skip_empty=True)
    >>> refuse_duplicate_names(["a", "b", "a"], "d.csv, line 1")
    Traceback (most recent call last):
    ...
    streamfs.producers.errors.InputFileError: d.csv, line 1: duplicate column name 'a' (columns 0 and 2): name each column once
    >>> refuse_duplicate_names(["a", "b", "b", "a", "b"], "d.parquet")
    Traceback (most recent call last):
    ...
    streamfs.producers.errors.InputFileError: d.parquet: duplicate column names 'a' (columns 0 and 3), 'b' (columns 1, 2 and 4): name each column once
    """
    where_of: dict[str, list[int]] = {}
    for j, name in enumerate(names):
        if name or not skip_empty:
            where_of.setdefault(name, []).append(j)
    dupes = [(name, js) for name, js in where_of.items() if len(js) > 1]
    if not dupes:
        return
    listed = ", ".join(f"{name!r} ({kind}s {', '.join(map(str, js[:-1]))} and {js[-1]})"
                       for name, js in dupes[:10])
    more = f" and {len(dupes) - 10} more" if len(dupes) > 10 else ""
    raise InputFileError(f"{where}: duplicate {kind} name{'s' if len(dupes) > 1 else ''} "
                         f"{listed}{more}: name each {kind} once")


def _feature_names(names: list[str], columns: list[int], path: Path) -> list[str]:
    """A header's names of the feature ``columns``, unnamed columns named by the rule for
    features without names, ``x<feature index>``; :class:`InputFileError` if such a name is
    already a named column's (results would carry two features of one name).

    >>> _feature_names(["", "b", "", "class"], [0, 1, 2], Path("d.csv"))
    ['x0', 'b', 'x2']
    >>> _feature_names(["class", "", "x0"], [1, 2], Path("d.csv"))
    Traceback (most recent call last):
    ...
    streamfs.producers.errors.InputFileError: d.csv, line 1: column 1 has no name and would be named 'x0' (unnamed columns are named x<feature index>), the name of column 2: name every column
    """
    features = [(c, names[c]) for c in columns]
    named = {n: c for c, n in features if n}
    out: list[str] = []
    clashes: list[str] = []
    for j, (c, name) in enumerate(features):
        if not name:
            name = f"x{j}"
            if name in named:
                clashes.append(f"column {c} has no name and would be named {name!r}"
                               + (" (unnamed columns are named x<feature index>)"
                                  if not clashes else "")
                               + f", the name of column {named[name]}")
        out.append(name)
    if clashes:
        more = f"; {len(clashes) - 10} more" if len(clashes) > 10 else ""
        raise InputFileError(f"{path}, line 1: {'; '.join(clashes[:10])}{more}: name every "
                             "column")
    return out


class DelimitedReader:
    """Chunks ``(X, y)`` of a delimited text file without holding the whole file.

    ``header``: ``True``/``False``, or ``None`` to detect it (a first row with a non-numeric
    feature field, or the column numbers 0, 1, 2, … or 1, 2, 3, … that pandas writes for a
    frame made from an array; or a label given by name). ``label``: column name or index
    (default the last). ``drop``: columns (names or indices) that are neither
    features nor the label, such as a row id (see :func:`feature_columns`). Labels are numbers
    if those of the first chunk all are (a later non-number is then an error naming its line),
    text otherwise.
    """

    def __init__(self, path: Path | str, *, label: str | int | None = None, delimiter: str = ",",
                 header: bool | None = None, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 drop: Sequence[str | int] = ()) -> None:
        self.path = Path(path)
        self.delimiter = delimiter
        self.size = self.path.stat().st_size
        self.bytes_read = 0
        first = self._first_row()
        self.width = len(first)
        if self.width < 2:
            raise InputFileError(f"{self.path}, line 1: needs at least one feature and a label "
                                 f"column, found {self.width} field(s) (delimiter {delimiter!r})"
                                 + _delimiter_hint(first[0] if first else "", delimiter))
        #: how the first row was taken when ``header`` is None: "data" or "header" by the
        #: numbers in it (checked against the labels of the first chunk), else None
        self._guessed: str | None = None
        self._first = first
        named_for_label = False  # the first row is the header because --label names a column
        if header is None:
            by_name = named_for_label = label is not None and not is_index(label)
            skips = set() if by_name else self._guess_skips(label, drop)
            header = by_name or any(not is_number(v) for j, v in enumerate(first)
                                    if j not in skips)
            self._guessed = None if by_name else "header" if header else "data"
            if not header and _numbers_columns(first):
                header = True  # a guess, said out loud: --no-header reads the row as data
                self._guessed = None
                shown = ",".join(first[:3] + ["…"] if len(first) > 3 else first)
                _note(f"{self.path}: first row {shown} read as a header of column numbers (as "
                      "pandas writes them); pass --no-header if it is data")
        self.header = header
        names = [h.strip() for h in first] if header else None
        self.label, self.names = label, names  # for errors that name the columns
        if named_for_label and all(is_number(v) for v in first) and str(label) not in names:
            # the first row was taken as the header only because --label names a column
            shown = ", ".join(first[:3] + ["…"] if len(first) > 3 else first)
            raise InputFileError(
                f"{self.path}: no label column named {label!r}: the first row ({shown}), read "
                "as the header because --label names a column, holds only numbers, so the "
                "file seems to have no header: give the label column's index instead (e.g. "
                f"--label {self.width - 1}, or -1 for the last column)")
        self.label_col = label_index(names, label, self.width, self.path)
        if names:
            refuse_duplicate_names(names, f"{self.path}, line 1", skip_empty=True)
        #: the file's columns read as features, in order
        self.feature_cols = feature_columns(names, self.label_col, drop, self.width, self.path)
        self.feature_names = None
        if names:
            self.feature_names = _feature_names(names, self.feature_cols, self.path)
            if names[0] == "" and self.feature_cols[0] == 0:
                _note(f"{self.path}: column 0 has no name, named x0 (the index pandas writes "
                      "unless to_csv(index=False)? It would be a feature like any other: "
                      "--drop 0 leaves it out)")
        self.n_features = len(self.feature_cols)
        self.chunk_rows = max(1, chunk_bytes // (8 * self.width))

    def _guess_skips(self, label: str | int | None, drop: Sequence[str | int]) -> set[int]:
        """The columns whose first-row field the header guess does not look at: the label's
        and those dropped by index (a text id in a file without a header is no header; a
        column dropped by name is the header's, whose text makes the first row the header)."""
        # (an index out of range may still be a header's name, "31" of columns 1..31: the
        # label is resolved once the header is known)
        return {int(c) % self.width for c in (label, *drop)
                if c is not None and is_index(c) and -self.width <= int(c) < self.width}

    def _first_row(self) -> list[str]:
        try:
            with open(self.path, newline="", encoding=TEXT_ENCODING) as fh:
                for _, _, row in self._records(fh):
                    if row:
                        return row
        except UnicodeDecodeError:
            raise self._not_utf8() from None
        raise InputFileError(f"{self.path}: empty file")

    def _records(self, fh: Any) -> Iterator[tuple[int, int, list[str]]]:
        """``(first line, last line, fields)`` of each record of the open file ``fh`` (a
        quoted field may hold line breaks); the csv module's errors (a field over its size
        limit: an unclosed quote makes the rest of the file one field) as
        :class:`InputFileError` naming the line where the record starts."""
        reader = csv.reader(fh, delimiter=self.delimiter)
        line = 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise InputFileError(f"{self.path}, line {line}: {exc}"
                                     + _spans(line, reader.line_num)) from None
            yield line, reader.line_num, row
            line = reader.line_num + 1

    def _not_utf8(self) -> InputFileError:
        """The error for a file that is not UTF-8 text, naming its first such line (a pass
        over the file, on this error only: the text reader decodes blocks, not lines)."""
        with open(self.path, "rb") as fh:
            for number, line in enumerate(fh, 1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    byte = line[exc.start]
                    return InputFileError(f"{self.path}, line {number}: not UTF-8 text (byte "
                                          f"0x{byte:02x}, byte {exc.start + 1} of the line); "
                                          f"save the file as UTF-8")
        return InputFileError(f"{self.path}: not UTF-8 text; save the file as UTF-8")

    def text_chunks(self) -> Iterator[tuple[np.ndarray, list[str], list[int]]]:
        """Chunks ``(X, label texts, line numbers)`` (see :meth:`chunks` for typed labels)."""
        try:
            yield from self._text_chunks()
        except UnicodeDecodeError:
            raise self._not_utf8() from None

    def _text_chunks(self) -> Iterator[tuple[np.ndarray, list[str], list[int]]]:
        self.bytes_read = 0
        with open(self.path, newline="", encoding=TEXT_ENCODING) as fh:
            skip_header = self.header
            rows: list[list[str]] = []
            lines: list[int] = []
            any_data = False
            for line, last, row in self._records(fh):
                if not row:
                    continue
                if skip_header:
                    skip_header = False
                    continue
                if len(row) != self.width:
                    blank = len(row) == 1 and not row[0].strip()
                    raise InputFileError(f"{self.path}, line {line}: "
                                         + ("a line of spaces only (delete it)" if blank else
                                            f"{len(row)} fields, expected {self.width}")
                                         + _spans(line, last))
                rows.append(row)
                lines.append(line)
                any_data = True
                if len(rows) == self.chunk_rows:
                    self.bytes_read = fh.buffer.raw.tell()  # type: ignore[attr-defined]
                    yield self._checked(self._parse(rows, lines))
                    rows, lines = [], []
            if rows:
                yield self._checked(self._parse(rows, lines))
            elif not any_data:  # said so, rather than "the labels are empty"
                raise InputFileError(f"{self.path}: no data rows, only a header")
        self.bytes_read = self.size

    def _checked(self, chunk: tuple[np.ndarray, list[str], list[int]]
                 ) -> tuple[np.ndarray, list[str], list[int]]:
        """``chunk``, noting on stderr when its labels make the header guess doubtful: a
        first row read as data whose label occurs in no other row (a header of numeric names,
        such as years), or one read as a header, mostly numbers, whose label field is one of
        the labels (a data row with a missing or text value). The rule itself stays as it is;
        only the first chunk is looked at (bounded memory)."""
        guessed, self._guessed = self._guessed, None
        labels = chunk[1]
        first = self._first[self.label_col].strip()
        shown = ",".join(self._first[:4] + ["…"] if len(self._first) > 4 else self._first)
        features = [self._first[c] for c in self.feature_cols]
        if guessed == "data" and len(labels) > 2 and len(set(labels[1:])) < len(labels) - 1 \
                and first not in labels[1:]:  # the other labels are classes, it is not one
            _note(f"{self.path}: first row {shown} read as data (its features are numbers), "
                  f"but its label {first!r} occurs in no other row: pass --header if it is "
                  "a header")
        elif guessed == "header" and first in labels \
                and 2 * sum(map(is_number, features)) >= len(features):
            _note(f"{self.path}: first row {shown} read as a header (not every feature is a "
                  f"number), but its label {first!r} is one of the labels: pass --no-header "
                  "if it is data")
        return chunk

    def _parse(self, rows: list[list[str]], lines: list[int]
               ) -> tuple[np.ndarray, list[str], list[int]]:
        li = self.label_col
        labels = [r[li].strip() for r in rows]
        if "" in labels:  # a missing label (pandas writes NaN so) would become a class ''
            bad = labels.index("")
            name = f" ({self.names[li]!r})" if self.names else ""
            raise InputFileError(f"{self.path}, line {lines[bad]}, column {li}{name}: the label "
                                 "is missing; every instance needs a class"
                                 + default_label_note(self.label, self.names, self.width))
        cols = self.feature_cols
        values = ([r[:li] + r[li + 1:] for r in rows] if len(cols) == self.width - 1
                  else [[r[c] for c in cols] for r in rows])
        try:
            X = np.array(values, dtype=np.float64)  # numpy parses the strings in C
        except ValueError:
            self._locate_bad_value(values, lines)
            raise
        if not np.isfinite(X).all():  # 'nan', 'inf', '1e400': numbers to numpy, refused later
            i, j = np.argwhere(~np.isfinite(X))[0]  # without the line they were on
            col = cols[j]
            name = f" ({self.feature_names[j]!r})" if self.feature_names else ""
            what = ("is NaN (a missing value): fill or drop it" if np.isnan(X[i, j]) else
                    "is infinite or beyond the largest float (1.8e308)")
            raise InputFileError(f"{self.path}, line {lines[i]}, column {col}{name}: "
                                 f"{values[i][j].strip()!r} {what}")
        return X, labels, lines

    def _locate_bad_value(self, values: list[list[str]], lines: list[int]) -> None:
        for row, line in zip(values, lines):
            for j, v in enumerate(row):
                if not is_number(v):
                    col = self.feature_cols[j]
                    name = f" ({self.feature_names[j]!r})" if self.feature_names else ""
                    # a column of text throughout may be the label; a stray value is a typo
                    text = not any(is_number(r[j]) for r in values)
                    what = ("an empty cell (a missing value): fill or drop it" if not v.strip()
                            else f"not a number: {v!r}")
                    raise InputFileError(f"{self.path}, line {line}, column {col}{name}: {what}"
                                         + _delimiter_hint(v, self.delimiter, value=True)
                                         + (default_label_note(self.label, self.names,
                                                               self.width) if text else ""))

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Chunks ``(X, y)``: ``X`` float64, ``y`` typed as described in the class docstring."""
        numeric: bool | None = None
        for X, labels, lines in self.text_chunks():
            if numeric is None:
                numeric = all(is_number(v) for v in labels)
            if not numeric:
                yield X, np.array(labels)
                continue
            bad = next((i for i, v in enumerate(labels) if not is_number(v)), None)
            if bad is not None:
                raise InputFileError(
                    f"{self.path}, line {lines[bad]}: label {labels[bad]!r} is not a number, but "
                    f"the labels of the first rows were (streaming fixes the label type early)")
            yield X, labels_from_text(labels, f"{self.path}, lines {lines[0]}..{lines[-1]}")
