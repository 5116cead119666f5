"""Producer adapters: turn arrays and files into feature or instance streams on Kafka."""

from streamfs.producers.blocks import (
    DEFAULT_BLOCK_BYTES,
    column_blocks,
    feature_stream_messages,
    instance_stream_messages,
    row_blocks,
)
from streamfs.producers.kafka import DeliveryError, StreamPublisher

__all__ = [
    "DEFAULT_BLOCK_BYTES", "DeliveryError", "StreamPublisher", "column_blocks",
    "feature_stream_messages", "instance_stream_messages", "row_blocks",
]
