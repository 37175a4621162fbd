"""Reports people look at rather than read: one self-contained HTML page per run."""
