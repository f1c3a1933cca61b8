"""What remains of an application after its driver is gone: archived logs and their stores,
event logs, and the History Server that shows them."""
