"""Testing with sim: the pytest plugin (scenario files as tests, cassettes for marked tests) and fuzzing
(hypothesis strategies, the oracle, the invariants, campaigns against our loop or yours)."""
