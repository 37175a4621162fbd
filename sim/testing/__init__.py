"""Testing with sim: the pytest plugin that collects scenario files."""
