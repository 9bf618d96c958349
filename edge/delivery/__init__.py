"""What leaves the device and what comes back: the durable outbox, the MQTT link (events out, verdicts in), the
escalation budget that meters it."""
