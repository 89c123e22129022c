"""The CI gate: a run against its baseline, by exact and statistical rules (`harness gate`, `harness run --gate`)."""
