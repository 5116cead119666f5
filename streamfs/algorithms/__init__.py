"""Pure numpy/scipy online feature selection algorithms (no I/O, no Kafka, no asyncio)."""
