"""Routing (being written)."""
