import threading

from numba import njit

from streamfs.compile_notice import notice_while_compiling


def test_a_compile_that_lasts_is_announced_once():
    said: list[str] = []
    twice = threading.Event()

    def say(message: str) -> None:
        said.append(message)
        twice.set()

    with notice_while_compiling(say, "compiling", after=0):
        njit(lambda x: x + 1)(1)
        njit(lambda x: x * 2)(1)  # a second compile does not announce again
        assert twice.wait(timeout=30)
    assert said == ["compiling"]


def test_nothing_is_said_without_a_compile():
    add = njit(lambda x: x + 1)
    add(1)  # compiled before the block: calling it compiles nothing
    noticed = threading.Event()
    with notice_while_compiling(lambda message: noticed.set(), "compiling", after=0):
        add(2)
        assert not noticed.wait(timeout=0.5)

