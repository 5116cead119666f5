"""Read LIBSVM/svmlight files incrementally: ``label idx:value ...`` per line.

Indices are 1-based in LIBSVM's own tools; scikit-learn's ``dump_svmlight_file`` writes
0-based ones by default. ``zero_based`` says which: ``True``, ``False``, or ``"auto"`` (the
default, as in scikit-learn's ``load_svmlight_file``): 0-based if an index 0 occurs anywhere
in the file, else 1-based. "auto" is decided before the first block is parsed, by the same
cheap vectorised scan that finds ``d`` when ``n_features`` is not given (one pass serves
both); when ``n_features`` is given, "auto" still scans, but stops at the first index 0 (a
1-based file is read through once more). Pass ``zero_based`` explicitly to skip that scan.

A ``qid:N`` token right after the label (SVMlight's query id, in learning-to-rank files)
is skipped, as scikit-learn's ``load_svmlight_file`` skips it.

The file is read in blocks of complete lines, so memory stays bounded by the block size
whatever the file size. A block is parsed by pyarrow's CSV reader when it is regular (one
space between tokens; the common case) and line by line in Python otherwise; the Python path
also finds the exact line of any error, so a fast-path failure is re-parsed there.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "tiny.svm"
>>> _ = p.write_text("1 1:0.5 3:2\\n-1 2:1\\n")
>>> scan_max_index(p)
3
>>> r = LibsvmReader(p)
>>> X, y = next(r.chunks())
>>> X.toarray().tolist(), y.tolist(), r.index_base
([[0.5, 0.0, 2.0], [0.0, 1.0, 0.0]], [1, -1], 1)
>>> _ = p.write_text("1 0:0.5 2:2\\n-1 1:1\\n")  # 0-based, as scikit-learn writes it
>>> r = LibsvmReader(p)
>>> X, y = next(r.chunks())
>>> X.toarray().tolist(), r.index_base, r.n_features
([[0.5, 0.0, 2.0], [0.0, 1.0, 0.0]], 0, 3)
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import scipy.sparse as sp

from streamfs.producers.errors import InputFileError, LooksZeroBased

#: bytes read per block; bounds the reader's memory (the parsed arrays are ~3x this)
DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024
#: a UTF-8 byte-order mark, which some editors write at the start of a file: dropped
BOM = b"\xef\xbb\xbf"
#: the largest feature index read (18 digits, as far as :func:`_block_indices` reads them)
MAX_INDEX = 10**18 - 1


def iter_line_blocks(path: Path, chunk_bytes: int) -> Iterator[tuple[int, bytes]]:
    """Yield ``(first_line_number, block)``: blocks of whole lines of about ``chunk_bytes``."""
    line = 1
    rest = b""
    with open(path, "rb") as fh:
        while True:
            data = fh.read(chunk_bytes)
            if not data:
                break
            data = rest + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # a line longer than the block: keep reading
                rest = data
                continue
            block, rest = data[:cut], data[cut:]
            yield line, block
            line += block.count(b"\n")
    if rest:
        yield line, rest + b"\n"


def _block_indices(block: bytes) -> np.ndarray:
    """The ``idx`` of every ``idx:`` token of a block, as written (vectorised digit arithmetic).

    Only the digits just before each colon count, so the values of malformed tokens
    (``-4:1``, ``2.5:1``) are meaningless; tokens without digits (``qid:``) are skipped. It
    does not validate: the real pass reports malformed lines.
    numpy rather than numba on purpose: initialising LLVM would add ~90 MB to the producer.
    """
    a = np.frombuffer(block, dtype=np.uint8)
    colons = np.flatnonzero(a == ord(":"))
    if colons.size == 0:
        return np.empty(0, dtype=np.int64)
    nondigit = np.flatnonzero((a < ord("0")) | (a > ord("9")))
    # the index token runs from just after the previous non-digit up to the colon
    prev = np.searchsorted(nondigit, colons) - 1
    start = np.where(prev >= 0, nondigit[np.maximum(prev, 0)] + 1, 0)
    length = np.minimum(colons - start, 18)  # 18 digits fit an int64
    keep = length > 0
    colons, length = colons[keep], length[keep]
    value = np.zeros(colons.size, dtype=np.int64)
    for p in range(int(length.max(initial=0))):
        m = length > p
        value[m] += (a[colons[m] - 1 - p].astype(np.int64) - ord("0")) * 10**p
    return value


def _without_comments(block: bytes) -> bytes:
    if b"#" in block:  # comments may hold "12:30"-like text: drop them first
        return b"\n".join(ln.split(b"#", 1)[0] for ln in block.split(b"\n"))
    return block


def scan_indices(path: Path, chunk_bytes: int = DEFAULT_CHUNK_BYTES, *,
                 stop_at_zero: bool = False) -> tuple[int, bool]:
    """Cheap pass: ``(largest index, whether an index 0 occurs)`` as written in the file.

    ``stop_at_zero``: return as soon as an index 0 is seen (the largest index is then only
    that of the blocks read so far). It does not validate; the real pass reports malformed
    lines.
    """
    best, zero = 0, False
    for _, block in iter_line_blocks(path, chunk_bytes):
        idx = _block_indices(_without_comments(block))
        if idx.size:
            best = max(best, int(idx.max()))
            if not zero and int(idx.min()) == 0:
                zero = True
                if stop_at_zero:
                    break
    return best, zero


def scan_max_index(path: Path, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> int:
    """Cheap first pass: the largest feature index in the file as written (for a 1-based
    file, its d). It does not validate; the real pass reports malformed lines."""
    return scan_indices(path, chunk_bytes)[0]


def _check_zero_based(zero_based: bool | str) -> None:
    if not (isinstance(zero_based, bool) or zero_based == "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")


def detect_index_base(path: Path | str, zero_based: bool | str = "auto",
                      chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> int:
    """The index base (0 or 1) that ``zero_based`` means for this file; "auto" scans it
    up to the first index 0 (see the module docstring). Name column ``j`` ``str(j + base)``
    to name features by their index as written in the file."""
    _check_zero_based(zero_based)
    if zero_based == "auto":
        return 0 if scan_indices(Path(path), chunk_bytes, stop_at_zero=True)[1] else 1
    return 0 if zero_based else 1


def _labels(values: np.ndarray) -> np.ndarray:
    """Integral labels as int64 (like the whole-file readers), others as float64."""
    if values.size and np.all(np.isfinite(values)) and np.all(values == np.round(values)):
        return values.astype(np.int64)
    return values


def _feature_tokens(parts: list[bytes]) -> list[bytes]:
    """The ``idx:value`` tokens of a line split on whitespace: after the label, and after a
    ``qid:`` token right after it (SVMlight's query id, not a feature)."""
    items = parts[1:]
    return items[1:] if items and items[0].startswith(b"qid:") else items


def _parse_slow(path: Path, block: bytes, first_line: int, base: int = 1
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Line by line: ``(indptr, column indices = idx - base, values, labels)``; the first
    malformed line raises :class:`InputFileError` naming the file and the line."""
    indptr, indices, data, y = [0], [], [], []
    for lineno, raw in enumerate(block.split(b"\n")[:-1], first_line):
        line = raw.split(b"#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        try:
            try:
                y.append(float(parts[0]))
            except ValueError:
                raise ValueError(f"label {parts[0].decode(errors='replace')!r} is not a number") from None
            for item in _feature_tokens(parts):
                idx, sep, val = item.partition(b":")
                token = item.decode(errors="replace")
                if not sep:
                    raise ValueError(f"expected idx:value, got {token!r}")
                try:
                    j = int(idx)
                except ValueError:
                    raise ValueError(f"feature index in {token!r} is not an integer") from None
                if j > MAX_INDEX:  # past int64, or the scan's reach (it reads 18 digits)
                    raise ValueError(f"feature index in {token!r} is too large (at most "
                                     f"{MAX_INDEX})")
                if j == 0 and base == 1:  # a hint naming zero_based, or the CLI's option
                    raise LooksZeroBased(f"{path}, line {lineno}: feature index 0 < 1 in "
                                         f"{token!r}", _read_as(path, lineno))
                if j < base:
                    raise ValueError(f"feature index {j} < {base} in {token!r}")
                try:
                    data.append(float(val))
                except ValueError:
                    raise ValueError(f"value in {token!r} is not a number") from None
                indices.append(j - base)
        except LooksZeroBased:
            raise
        except ValueError as exc:
            raise InputFileError(f"{path}, line {lineno}: {exc}{_read_as(path, lineno)}") \
                from None
        indptr.append(len(indices))
    return (np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
            np.asarray(data, dtype=np.float64), np.asarray(y, dtype=np.float64))


def _read_as(path: Path, lineno: int) -> str:
    """A note for an error on line ``lineno``: a .txt file is read as LIBSVM by its suffix,
    said where it may be a CSV."""
    return (" (read as LIBSVM, by its .txt suffix; a CSV file needs a .csv name)"
            if Path(path).suffix.lower() == ".txt" and lineno <= 2 else "")


def _parse_fast(block: bytes, base: int = 1
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Parse a regular block with pyarrow, or ``None`` (irregular, invalid, or no pyarrow);
    the same arrays as :func:`_parse_slow`.

    Each line ``lab i:v ...`` becomes CSV rows ``-1,lab`` / ``i,v``: index -1 is invalid in
    either base, so it marks the start of an instance.
    """
    if block[:1].isspace() or b"#" in block or b"\n " in block or b"\n\t" in block:
        return None
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        return None
    text = (b"-1:" + block.replace(b"\r", b"").replace(b"\t", b" ").replace(b"\n", b"\n-1:"))
    text = text.replace(b" ", b"\n").replace(b":", b",")
    try:
        table = pacsv.read_csv(
            io.BytesIO(text),
            read_options=pacsv.ReadOptions(column_names=["i", "v"], use_threads=False,
                                           block_size=max(1 << 20, 2 * len(text))),
            parse_options=pacsv.ParseOptions(quote_char=False, double_quote=False),
            convert_options=pacsv.ConvertOptions(column_types={"i": pa.int64(), "v": pa.float64()},
                                                 null_values=[""], strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    i_col, v_col = (_one_array(table.column(n)) for n in ("i", "v"))
    if i_col.null_count:
        return None
    i, v = _values(i_col, np.int64), _values(v_col, np.float64)
    marker = i == -1
    if np.count_nonzero(marker) != block.count(b"\n") + 1:  # an explicit "-1:v" in the data
        return None
    if v_col.null_count:
        null = ~np.unpackbits(np.frombuffer(v_col.buffers()[0], dtype=np.uint8),
                              bitorder="little")[v_col.offset:v_col.offset + len(v_col)].astype(bool)
        if np.any(null & ~marker):  # "3:" without a value
            return None
        keep = ~(null & marker)  # a blank line leaves a marker without label: drop it
        i, v, marker = i[keep], v[keep], marker[keep]
    starts = np.flatnonzero(marker)
    entry = ~marker
    if np.any(i[entry] < base) or np.any(i[entry] > MAX_INDEX):  # the slow path names it
        return None
    counts = np.diff(np.append(starts, i.size)) - 1
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return indptr, i[entry] - base, v[entry], v[starts]


def _one_array(column: Any) -> Any:
    import pyarrow as pa

    return column.chunk(0) if column.num_chunks == 1 else pa.concat_arrays(column.chunks)


def _values(array: Any, dtype: type) -> np.ndarray:
    """Zero-copy view of a primitive arrow array's values (slots under nulls are arbitrary).

    Not ``to_numpy()``: that imports pandas, ~40 MB of RSS for nothing here.
    """
    return np.frombuffer(array.buffers()[1], dtype=dtype)[array.offset:array.offset + len(array)]


class LibsvmReader:
    """Blocks ``(X, y)`` of a LIBSVM file, ``X`` sparse CSR with ``n_features`` columns.

    ``zero_based``: ``True``, ``False`` or ``"auto"`` (0-based if an index 0 occurs in the
    file); ``index_base`` (0 or 1) is the base used, decided in the constructor, so column
    ``j`` of ``X`` is index ``j + index_base`` in the file. ``n_features``: d if known
    (indices beyond it are errors); otherwise a first pass (:func:`scan_indices`) finds it,
    and that pass also decides "auto". ``bytes_read`` tracks progress through the file.
    ``feature_names`` is ``None`` (LIBSVM has none).
    """

    def __init__(self, path: Path | str, n_features: int | None = None, *,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 zero_based: bool | str = "auto") -> None:
        _check_zero_based(zero_based)
        self.path = Path(path)
        self.chunk_bytes = chunk_bytes
        self.size = self.path.stat().st_size
        self.bytes_read = 0
        self.zero_based = zero_based
        if n_features is None:
            top, zero = scan_indices(self.path, chunk_bytes)
            self.index_base = (0 if zero else 1) if zero_based == "auto" else int(not zero_based)
            # 1-based: d = largest index; 0-based: one more (an empty file has d = 0)
            self.n_features = top + 1 - self.index_base if (top or zero) else 0
            if self.n_features == 0:  # refused now, before a producer opens a stream of it:
                for _ in self.chunks():  # the parse names a malformed line, or says why
                    pass
        else:
            self.index_base = detect_index_base(self.path, zero_based, chunk_bytes)
            self.n_features = n_features
        self.feature_names: list[str] | None = None

    def chunks(self) -> Iterator[tuple[sp.csr_matrix, np.ndarray]]:
        d, base = self.n_features, self.index_base
        index_dtype = np.int32 if d < 2**31 else np.int64  # halves the wire size of indices
        self.bytes_read = 0
        for first_line, block in iter_line_blocks(self.path, self.chunk_bytes):
            if first_line == 1 and block.startswith(BOM):  # Notepad's "UTF-8", as in CSV files
                self.bytes_read += len(BOM)
                block = block[len(BOM):]
            parsed = _parse_fast(block, base) or _parse_slow(self.path, block, first_line, base)
            indptr, indices, values, labels = parsed
            if indices.size and indices.max() >= d:
                self._index_error(block, first_line, d)
            self.bytes_read += len(block)
            if labels.size == 0:
                continue
            if d == 0:  # the scan found no index anywhere: the algorithms would refuse d = 0
                raise InputFileError(f"{self.path}: no feature on any line (labels alone)")
            X = sp.csr_matrix((values, indices.astype(index_dtype), indptr.astype(index_dtype)),
                              shape=(labels.size, d))
            X.sort_indices()  # (lines may list their indices in any order)
            if _has_duplicates(X):  # scipy would add the values up without a word
                self._duplicate_error(block, first_line)
            yield X, _labels(labels)
        if d == 0:
            raise InputFileError(f"{self.path}: empty file (no instance)")

    def _index_error(self, block: bytes, first_line: int, d: int) -> None:
        base = self.index_base
        for lineno, raw in enumerate(block.split(b"\n"), first_line):
            line = raw.split(b"#", 1)[0]
            for item in _feature_tokens(line.split()):
                idx = int(item.partition(b":")[0])
                if idx - base >= d:
                    bound = f"> n_features = {d}" if base else f">= n_features = {d} (0-based)"
                    raise InputFileError(f"{self.path}, line {lineno}: feature index {idx} "
                                         f"{bound}")
        raise AssertionError("an index beyond d was seen but not found again")

    def _duplicate_error(self, block: bytes, first_line: int) -> None:
        for lineno, raw in enumerate(block.split(b"\n"), first_line):
            seen: set[int] = set()
            for item in _feature_tokens(raw.split(b"#", 1)[0].split()):
                idx = int(item.partition(b":")[0])
                if idx in seen:
                    raise InputFileError(
                        f"{self.path}, line {lineno}: feature index {idx} appears twice (a "
                        "LIBSVM line gives each feature once; which value is meant?)")
                seen.add(idx)
        raise AssertionError("a duplicate index was seen but not found again")


def _has_duplicates(X: sp.csr_matrix) -> bool:
    """Whether a row of ``X`` (indices sorted within rows) holds an index twice."""
    same = X.indices[1:] == X.indices[:-1]
    starts = X.indptr[1:-1]  # a pair across a row's start is two rows' entries
    same[starts[(starts > 0) & (starts < X.indices.size)] - 1] = False
    return bool(same.any())
