"""Questions in words about what the cameras saw (POST /v1/ask): see router.py."""
