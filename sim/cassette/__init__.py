"""Cassettes: reading any vcrpy cassette (and, later, recording and replaying sessions)."""
