"""Cassettes: recording live sessions with vcrpy, replaying them offline, and reading, auditing and
converting anyone's vcrpy cassettes."""
