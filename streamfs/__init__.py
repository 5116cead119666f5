"""streamfs: online feature selection on Kafka streams."""

__version__ = "0.1.0"
