"""Persistence: the embedded SQLite store."""
