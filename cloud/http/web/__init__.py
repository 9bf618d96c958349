"""The operator's page: a live timeline of events with thumbnails and decision paths, and the figures."""

from .entries import DeviceDecision
from .routes import add_page, page_link, post_page_link
from .timeline import Timeline

__all__ = ["DeviceDecision", "Timeline", "add_page", "page_link", "post_page_link"]
