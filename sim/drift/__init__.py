"""`sim drift`: whether today's model still answers a recorded conversation as the recording says."""
