"""Real message brokers a run starts for itself (docs/distribution.md):
started beside the gateway, waited for until a client round trip works,
stopped with the run; version, configuration and log kept in the run
directory."""
