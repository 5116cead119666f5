"""The worker: a transactional Kafka loop around ``StreamProcessor`` (stream logic, no Kafka)."""

import signal

#: the signals that stop the worker cleanly: a supervisor's SIGTERM, a Ctrl-C, and the SIGHUP
#: of a closed terminal or ssh session (which otherwise ended it at once, its batch uncommitted)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
