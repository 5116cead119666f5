"""The worker: a transactional Kafka loop around ``StreamProcessor`` (stream logic, no Kafka)."""
