"""What the service counts while it works: its counters, latencies and throttled warnings (servicestats), the events
in flight that questions give way to (pressure). Imports nothing of ours."""
