"""The observers: the figures, /metrics, Home Assistant, and the typed views they read of the service (observed).
They never import the service."""
