"""Runnable examples of streamfs consumers."""
