"""The operator's page: a live timeline of events with thumbnails and decision paths, and the figures."""

from .routes import add_page, page_link
from .timeline import DeviceDecision, Timeline

__all__ = ["DeviceDecision", "Timeline", "add_page", "page_link"]
