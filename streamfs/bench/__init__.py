"""In-process benchmarks and dataset runs of the algorithms (no Kafka)."""
