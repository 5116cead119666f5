"""The ``streamfs`` command line: :func:`main`, the ``streamfs`` command (:mod:`.group`), with
the commands of the modules below registered on it when they are imported (``bench`` and
``evaluate`` are imported only when they run: :data:`.group._LAZY_COMMANDS`)."""

from streamfs.cli.group import main
from streamfs.cli import (algorithms, dead_letters, produce, select, topics, version, watch,
                          worker)

__all__ = ["main", "algorithms", "dead_letters", "produce", "select", "topics", "version",
           "watch", "worker"]
