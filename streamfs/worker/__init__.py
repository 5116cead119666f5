"""The faust worker: thin glue between the input topics, the tables and ``streamfs.algorithms``."""
