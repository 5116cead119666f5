"""Producer adapters: turn arrays, DataFrames and files into feature or instance streams."""

from streamfs.producers.blocks import (
    DEFAULT_BLOCK_BYTES,
    column_blocks,
    feature_order,
    feature_stream_messages,
    instance_messages_from_chunks,
    instance_stream_messages,
    row_blocks,
)
from streamfs.producers.errors import (InputDataError, InputFileError, PublishInterrupted,
                                       StreamLeftOpen)
from streamfs.producers.files import load_file
from streamfs.producers.kafka import DeliveryError, StreamPublisher
from streamfs.producers.publish import StreamExists, produce_features, produce_instances
from streamfs.producers.sources import open_instances

__all__ = [
    "DEFAULT_BLOCK_BYTES", "DeliveryError", "InputDataError", "InputFileError", "StreamExists",
    "PublishInterrupted", "StreamLeftOpen", "StreamPublisher", "column_blocks", "feature_order",
    "feature_stream_messages", "instance_messages_from_chunks", "instance_stream_messages",
    "load_file", "open_instances",
    "produce_features", "produce_instances", "row_blocks",
]
