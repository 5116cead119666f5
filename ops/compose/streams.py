"""Publish a list of streams and check their final selections, with the streamfs CLI only.

Runs inside the streamfs image, next to the compose project's broker (ops/compose-smoke.sh
calls it through `docker-compose run`):

    python ops/compose/streams.py produce LIST        publish every stream of LIST at once
    python ops/compose/streams.py progress LIST       print "<with results> <final> <total>"
    python ops/compose/streams.py check LIST [--timeout S]
        wait until every stream of LIST has a final selection (`streamfs watch --once`), then
        compare each with `streamfs select` on the same data (the offline path): exit 1 unless
        all are equal

LIST lines (``#`` comments): ``STREAM KIND SOURCE ALGORITHM RATE [PARAM=VALUE ...]``; RATE is
``--rate`` of ``streamfs produce`` or ``-``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass


@dataclass
class Stream:
    name: str
    kind: str
    source: str
    algorithm: str
    rate: str
    params: list[str]

    def param_args(self) -> list[str]:
        return [a for p in self.params for a in ("--param", p)]


def read_list(path: str) -> list[Stream]:
    streams = []
    for line in open(path, encoding="utf-8"):
        fields = line.split("#", 1)[0].split()
        if fields:
            streams.append(Stream(*fields[:5], fields[5:]))
    return streams


def produce(streams: list[Stream]) -> int:
    """All streams at once (one `streamfs produce` each): they interleave on the topics."""
    procs = {}
    for s in streams:
        cmd = ["streamfs", "produce", s.kind, s.source, "--stream", s.name,
               "--algorithm", s.algorithm, *s.param_args(), "--replace", "--no-progress"]
        if s.rate != "-":
            cmd += ["--rate", s.rate]
        procs[s.name] = subprocess.Popen(cmd)
    failed = [name for name, p in procs.items() if p.wait() != 0]
    print(f"published {len(streams) - len(failed)}/{len(streams)} streams"
          + (f"; failed: {' '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


def current(streams: list[Stream]) -> dict[str, dict]:
    """The latest result of each listed stream (`streamfs watch --once --json`)."""
    proc = subprocess.run(["streamfs", "watch", "--once", "--json"], capture_output=True,
                          text=True)
    names = {s.name for s in streams}
    latest = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
            if result.get("stream") in names:
                latest[result["stream"]] = result
    return latest


def progress(streams: list[Stream]) -> int:
    latest = current(streams)
    print(len(latest), sum(bool(r.get("final")) for r in latest.values()), len(streams))
    return 0


def offline(s: Stream) -> dict:
    proc = subprocess.run(["streamfs", "select", s.source, "--algorithm", s.algorithm,
                           *s.param_args(), "--json"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"streamfs select for {s.name} failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check(streams: list[Stream], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        latest = current(streams)
        finals = {k: r for k, r in latest.items() if r.get("final")}
        if len(finals) == len(streams):
            break
        if time.monotonic() > deadline:
            missing = sorted({s.name for s in streams} - set(finals))
            print(f"timed out after {timeout:.0f} s: no final selection for {missing}")
            return 1
        time.sleep(2)
    # the offline runs share the image's numba cache; two at a time on a small machine
    with ThreadPoolExecutor(2) as pool:
        expected = dict(zip([s.name for s in streams], pool.map(offline, streams)))
    bad = 0
    for s in streams:
        got, want = finals[s.name]["selection"], expected[s.name]["selection"]
        features = [item["feature"] for item in got]
        same = got == want  # features, order, names, scores and affiliated features
        bad += not same
        print(f"{'ok      ' if same else 'MISMATCH'} {s.name:24} {s.algorithm:11} "
              f"v{finals[s.name]['version']:<3} {features}"
              + ("" if same else f"  offline: {[i['feature'] for i in want]}"), flush=True)
        if not same:  # the first item that differs, field by field
            i = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), len(got))
            print(f"         streaming item {i}: {got[i] if i < len(got) else None}\n"
                  f"         offline   item {i}: {want[i] if i < len(want) else None}")
    print(f"{len(streams) - bad}/{len(streams)} final selections equal to `streamfs select`")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("produce", "progress", "check"):
        print(__doc__, file=sys.stderr)
        return 2
    streams = read_list(argv[1])
    if argv[0] == "produce":
        return produce(streams)
    if argv[0] == "progress":
        return progress(streams)
    timeout = float(argv[argv.index("--timeout") + 1]) if "--timeout" in argv else 600.0
    return check(streams, timeout)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
