"""Prometheus metrics of the worker (served with faust's own on the web port, at /metrics)."""

from prometheus_client import Counter, Gauge, Histogram

MESSAGES = Counter("streamfs_messages_total", "Input messages handled",
                   ["topic", "outcome"])  # outcome: applied | skipped | dead_letter
ITEMS = Counter("streamfs_items_total", "Features or instances applied", ["kind"])
STEP_SECONDS = Histogram("streamfs_step_seconds", "Algorithm step latency per message",
                         ["algorithm"],
                         buckets=(0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 60))
SELECTION_SIZE = Gauge("streamfs_selection_size", "Size of the current selection", ["stream"])
RESULTS = Counter("streamfs_results_total", "Result versions published", ["final"])
DEAD_LETTERS = Counter("streamfs_dead_letters_total", "Messages sent to the dead-letter topic",
                       ["topic"])
REBUILD_SECONDS = Histogram("streamfs_state_rebuild_seconds",
                            "Time to rebuild a stream's algorithm from its table records",
                            buckets=(0.001, 0.01, 0.1, 0.5, 2, 10))
