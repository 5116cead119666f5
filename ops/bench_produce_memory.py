"""Bounded-memory check of `streamfs produce instances` on large LIBSVM files.

Generates a seeded svmlight file of about ``--size-gb`` GB (d features, ~``--nnz`` non-zeros
per row) in a temporary directory, produces it as an instance stream to the broker at
``$STREAMFS_BOOTSTRAP_SERVERS`` (fresh topics, deleted afterwards) with the real CLI in a child
process, and reports the child's peak RSS (``getrusage(RUSAGE_CHILDREN)``: the generator's
memory in this process does not count) and throughput. The file is deleted unless ``--keep``.

    STREAMFS_BOOTSTRAP_SERVERS=$(cat .run/kafka/bootstrap) \\
        .venv/bin/python ops/bench_produce_memory.py --size-gb 0.1 --size-gb 1
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np


def generate(path: Path, size_bytes: int, d: int, nnz: int, seed: int) -> tuple[int, int]:
    """Write rows until the file reaches ``size_bytes``; returns ``(rows, largest index)``."""
    rng = np.random.default_rng(seed)
    formats: dict[int, str] = {}
    rows = written = top = 0
    with open(path, "w", buffering=1 << 22) as fh:
        while written < size_bytes:
            lines = []
            for _ in range(2000):
                k = int(rng.integers(nnz // 2, nnz * 3 // 2 + 1))
                idx = np.unique(rng.integers(1, d + 1, k))
                vals = np.round(rng.standard_normal(idx.size), 4)
                fmt = formats.setdefault(idx.size, "%d" + " %d:%.4g" * idx.size)
                pairs = np.empty(2 * idx.size, dtype=object)
                pairs[0::2], pairs[1::2] = idx.tolist(), vals.tolist()
                lines.append(fmt % (1 if rng.random() < 0.5 else -1, *pairs))
                top = max(top, int(idx[-1]))
            text = "\n".join(lines) + "\n"
            fh.write(text)
            written += len(text)
            rows += len(lines)
    return rows, top


def produce(path: Path, prefix: str, extra: list[str]) -> tuple[float, str]:
    env = {**os.environ, "STREAMFS_TOPIC_PREFIX": prefix}
    cmd = [sys.executable, "-m", "streamfs.cli", "produce", "instances", str(path),
           "--stream", "bench", "-a", "ofs", "--no-progress", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"produce failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout.strip()


def topic_messages(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    from confluent_kafka import KafkaException

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}"})
    try:
        parts = c.list_topics(topic, timeout=30).topics[topic].partitions
        for attempt in range(30):  # fresh topics may not have elected their leaders yet
            try:
                return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                           for p in parts)
            except KafkaException:
                if attempt == 29:
                    raise
                time.sleep(1)
        raise AssertionError("unreachable")
    finally:
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-gb", type=float, action="append", help="repeatable; default 1")
    ap.add_argument("--d", type=int, default=1_000_000)
    ap.add_argument("--nnz", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-features", action="store_true",
                    help="pass --n-features d (skip the first pass that scans for d)")
    ap.add_argument("--tmpdir", default=None)
    ap.add_argument("--file", type=Path, default=None,
                    help="produce this existing file instead of generating one (kept)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    bootstrap = os.environ.get("STREAMFS_BOOTSTRAP_SERVERS")
    if not bootstrap:
        raise SystemExit("set STREAMFS_BOOTSTRAP_SERVERS")

    from confluent_kafka.admin import AdminClient

    from streamfs.topics import create_topics, load_catalogue

    prefix = f"bench{uuid.uuid4().hex[:8]}."
    catalogue = load_catalogue(prefix)
    create_topics({"bootstrap.servers": bootstrap}, catalogue)
    topic = catalogue["instances"].name
    tmp = Path(tempfile.mkdtemp(prefix="streamfs-bench-", dir=args.tmpdir))
    try:
        for size_gb in [None] if args.file else args.size_gb or [1.0]:
            if args.file:
                path, rows = args.file, None
            else:
                path = tmp / f"bench-{size_gb}g.svm"
                t0 = time.perf_counter()
                rows, top = generate(path, int(size_gb * 1e9), args.d, args.nnz, args.seed)
                print(f"generated {path.name}: {path.stat().st_size / 1e6:.0f} MB, {rows} rows, "
                      f"d={args.d} (largest index {top}) in {time.perf_counter() - t0:.0f} s",
                      flush=True)
            size = path.stat().st_size
            before = topic_messages(bootstrap, topic)
            extra = ["--n-features", str(args.d)] if args.n_features else []
            elapsed, out = produce(path, prefix, extra)
            # RUSAGE_CHILDREN holds the largest child so far: sizes run in increasing order
            peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            landed = topic_messages(bootstrap, topic) - before
            sent = int(re.search(r"published (\d+) messages", out).group(1))
            rows = rows or int(re.search(r"\((\d+) instances", out).group(1))
            assert landed == sent, f"{sent} messages published but {landed} on the topic"
            print(f"  {out}")
            print(f"  peak RSS {peak_mb:.0f} MB | {elapsed:.1f} s | {size / 1e6 / elapsed:.1f} MB/s"
                  f" | {rows / elapsed:,.0f} instances/s | {sent} messages on the topic"
                  f"{'' if args.n_features else ' (includes the first pass for d)'}", flush=True)
            if not (args.keep or args.file):
                path.unlink()
    finally:
        if not args.keep:
            for p in tmp.iterdir():
                p.unlink()
            tmp.rmdir()
        admin = AdminClient({"bootstrap.servers": bootstrap})  # keep it alive until done
        futures = admin.delete_topics([spec.name for spec in catalogue.values()])
        for f in futures.values():
            f.result()


if __name__ == "__main__":
    main()
