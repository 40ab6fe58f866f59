"""How a capture reaches the gateway under test (docs/transports.md): every
gateway through its contract (contract.run_contract), over udp, serial or
its own file mode."""
