import time

from streamfs.bench.pipeline import FinalWatcher


class _Reader:
    """A reader whose `updates` goes on after the final result, as `until_final` does while it
    reads every partition to its end (a fetch wait on a real broker)."""

    def __init__(self) -> None:
        self.resumed_at: float | None = None

    def assign(self) -> int:
        return 1

    def close(self) -> None:
        pass

    def updates(self, stream, *, until_final, timeout):
        yield {"stream": stream, "version": 1, "final": False}
        yield {"stream": stream, "version": 2, "final": True}
        self.resumed_at = time.time()
        while time.time() < self.resumed_at + 0.02:  # the catch-up takes time
            pass


def test_final_watcher_stamps_the_final_result_when_it_arrives_not_after_the_catch_up():
    reader = _Reader()
    result, at = FinalWatcher({}, "selected", "s", reader=reader).result(timeout=10)
    assert result["version"] == 2 and result["final"]
    assert reader.resumed_at is not None and at <= reader.resumed_at


def test_final_watcher_without_a_final_result_times_out():
    class Unfinished(_Reader):
        def updates(self, stream, *, until_final, timeout):
            yield {"stream": stream, "version": 1, "final": False}

    watcher = FinalWatcher({}, "selected", "s", reader=Unfinished())
    try:
        watcher.result(timeout=10)
    except TimeoutError as exc:
        assert "no final result of s" in str(exc)
    else:
        raise AssertionError("a watcher that saw no final result returned one")
