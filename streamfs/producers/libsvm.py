"""Read LIBSVM/svmlight files incrementally: ``label idx:value ...`` per line, 1-based indices.

The file is read in blocks of complete lines, so memory stays bounded by the block size
whatever the file size. A block is parsed by pyarrow's CSV reader when it is regular (one
space between tokens; the common case) and line by line in Python otherwise; the Python path
also finds the exact line of any error, so a fast-path failure is re-parsed there.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "tiny.svm"
>>> _ = p.write_text("1 1:0.5 3:2\\n-1 2:1\\n")
>>> scan_max_index(p)
3
>>> X, y = next(LibsvmReader(p).chunks())
>>> X.toarray().tolist(), y.tolist()
([[0.5, 0.0, 2.0], [0.0, 1.0, 0.0]], [1, -1])
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import scipy.sparse as sp

from streamfs.producers.errors import InputFileError

#: bytes read per block; bounds the reader's memory (the parsed arrays are ~3x this)
DEFAULT_CHUNK_BYTES = 4 * 1024 * 1024


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


def _block_max_index(block: bytes) -> int:
    """Largest ``idx`` of the ``idx:`` tokens in a block (vectorised digit arithmetic).

    numpy rather than numba on purpose: initialising LLVM would add ~90 MB to the producer.
    """
    a = np.frombuffer(block, dtype=np.uint8)
    colons = np.flatnonzero(a == ord(":"))
    if colons.size == 0:
        return 0
    nondigit = np.flatnonzero((a < ord("0")) | (a > ord("9")))
    # the index token runs from just after the previous non-digit up to the colon
    prev = np.searchsorted(nondigit, colons) - 1
    start = np.where(prev >= 0, nondigit[np.maximum(prev, 0)] + 1, 0)
    length = np.minimum(colons - start, 18)  # 18 digits fit an int64
    value = np.zeros(colons.size, dtype=np.int64)
    for p in range(int(length.max())):
        m = length > p
        value[m] += (a[colons[m] - 1 - p].astype(np.int64) - ord("0")) * 10**p
    return int(value.max())


def scan_max_index(path: Path, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> int:
    """Cheap first pass: the largest feature index (1-based) in the file, i.e. its d.

    It does not validate; the real pass reports malformed lines.
    """
    best = 0
    for _, block in iter_line_blocks(path, chunk_bytes):
        if b"#" in block:  # comments may hold "12:30"-like text: drop them first
            block = b"\n".join(ln.split(b"#", 1)[0] for ln in block.split(b"\n"))
        best = max(best, _block_max_index(block))
    return best


def _labels(values: np.ndarray) -> np.ndarray:
    """Integral labels as int64 (like the whole-file readers), others as float64."""
    if values.size and np.all(np.isfinite(values)) and np.all(values == np.round(values)):
        return values.astype(np.int64)
    return values


def _parse_slow(path: Path, block: bytes, first_line: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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
            for item in parts[1:]:
                idx, sep, val = item.partition(b":")
                token = item.decode(errors="replace")
                if not sep:
                    raise ValueError(f"expected idx:value, got {token!r}")
                try:
                    j = int(idx)
                except ValueError:
                    raise ValueError(f"feature index in {token!r} is not an integer") from None
                if j < 1:
                    raise ValueError(f"feature index {j} < 1 in {token!r}")
                try:
                    data.append(float(val))
                except ValueError:
                    raise ValueError(f"value in {token!r} is not a number") from None
                indices.append(j - 1)
        except ValueError as exc:
            raise InputFileError(f"{path}, line {lineno}: {exc}") from None
        indptr.append(len(indices))
    return (np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64),
            np.asarray(data, dtype=np.float64), np.asarray(y, dtype=np.float64))


def _parse_fast(block: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Parse a regular block with pyarrow, or ``None`` (irregular, invalid, or no pyarrow).

    Each line ``lab i:v ...`` becomes CSV rows ``0,lab`` / ``i,v``: index 0 never occurs in
    LIBSVM, so it marks the start of an instance.
    """
    if block[:1].isspace() or b"#" in block or b"\n " in block or b"\n\t" in block:
        return None
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        return None
    text = (b"0:" + block.replace(b"\r", b"").replace(b"\t", b" ").replace(b"\n", b"\n0:"))
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
    marker = i == 0
    if np.count_nonzero(marker) != block.count(b"\n") + 1:  # an explicit "0:v" in the data
        return None
    if v_col.null_count:
        null = ~np.unpackbits(np.frombuffer(v_col.buffers()[0], dtype=np.uint8),
                              bitorder="little")[v_col.offset:v_col.offset + len(v_col)].astype(bool)
        if np.any(null & ~marker):  # "3:" without a value
            return None
        keep = ~(null & marker)  # a blank line leaves a marker without label: drop it
        i, v, marker = i[keep], v[keep], marker[keep]
    if np.any(i < 0):
        return None
    starts = np.flatnonzero(marker)
    entry = ~marker
    counts = np.diff(np.append(starts, i.size)) - 1
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return indptr, i[entry] - 1, v[entry], v[starts]


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

    ``n_features``: d if known (indices beyond it are errors); otherwise a first pass
    (:func:`scan_max_index`) finds it. ``bytes_read`` tracks progress through the file.
    """

    def __init__(self, path: Path | str, n_features: int | None = None, *,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> None:
        self.path = Path(path)
        self.chunk_bytes = chunk_bytes
        self.size = self.path.stat().st_size
        self.bytes_read = 0
        self.n_features = scan_max_index(self.path, chunk_bytes) if n_features is None else n_features
        self.feature_names: list[str] | None = None

    def chunks(self) -> Iterator[tuple[sp.csr_matrix, np.ndarray]]:
        d = self.n_features
        index_dtype = np.int32 if d < 2**31 else np.int64  # halves the wire size of indices
        self.bytes_read = 0
        for first_line, block in iter_line_blocks(self.path, self.chunk_bytes):
            parsed = _parse_fast(block) or _parse_slow(self.path, block, first_line)
            indptr, indices, values, labels = parsed
            if indices.size and indices.max() >= d:
                self._index_error(block, first_line, d)
            self.bytes_read += len(block)
            if labels.size == 0:
                continue
            X = sp.csr_matrix((values, indices.astype(index_dtype), indptr.astype(index_dtype)),
                              shape=(labels.size, d))
            X.sum_duplicates()
            yield X, _labels(labels)

    def _index_error(self, block: bytes, first_line: int, d: int) -> None:
        for lineno, raw in enumerate(block.split(b"\n"), first_line):
            line = raw.split(b"#", 1)[0]
            for item in line.split()[1:]:
                idx = int(item.partition(b":")[0])
                if idx > d:
                    raise InputFileError(f"{self.path}, line {lineno}: feature index {idx} > "
                                         f"n_features = {d}")
        raise AssertionError("an index beyond d was seen but not found again")
