"""itchbench tested against gateways broken on purpose: the mutant zoo and its runner (docs/selftest.md)."""
