"""Gateways under test, whatever their language: the contract file that
describes one (contract), the one adapter that drives it (adapter), the
collector of its BBO output (collector), the black-box checks of what
it wrote (blackbox) and of a white box's own latency log (white_box)."""
