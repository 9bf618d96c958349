"""The per-event path: the service (validate, dedupe, cache, claim, decide, store, publish) and its housekeeping
(load reports, retention)."""
