"""The order in which waiting events reach the model: by priority tier (0 first), then round-robin between
sites and between the devices of a site, first come first served within a device. One busy device (or site)
therefore delays only itself: every other device's next event is at most one turn away.

Items need `tier`, `event.device` and `event.site`; the queue holds them and says which to take next, and
which to give up when it is full (`victim`): a less urgent one, else the newest of the device holding the
most, if that device holds more than the newcomer's.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import Any


def _site(item: Any) -> str:
    """The fairness group above the device: its site, or the device alone when it names none."""
    site = item.event.site
    return f"site:{site}" if site else f"device:{item.event.device}"


class FairQueue:
    def __init__(self) -> None:
        # tier -> site -> device -> items, oldest first; the first site (device) is the next one's turn
        self._tiers: dict[int, OrderedDict[str, OrderedDict[str, deque[Any]]]] = {}
        self._per_device: dict[str, int] = {}
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Any]:
        for tier in sorted(self._tiers):
            for devices in self._tiers[tier].values():
                for items in devices.values():
                    yield from items

    def count(self, device: str) -> int:
        """Items of `device` waiting, all tiers."""
        return self._per_device.get(device, 0)

    def push(self, item: Any) -> None:
        sites = self._tiers.setdefault(item.tier, OrderedDict())
        devices = sites.setdefault(_site(item), OrderedDict())
        devices.setdefault(item.event.device, deque()).append(item)
        self._per_device[item.event.device] = self._per_device.get(item.event.device, 0) + 1
        self._len += 1

    def pop(self) -> Any | None:
        """The next item: lowest tier, then the site and device whose turn it is."""
        if not self._tiers:
            return None
        tier = min(self._tiers)
        sites = self._tiers[tier]
        site, devices = next(iter(sites.items()))
        device, items = next(iter(devices.items()))
        item = items.popleft()
        if items:
            devices.move_to_end(device)  # the device's next item waits for every other device's turn
        else:
            del devices[device]
        if devices:
            sites.move_to_end(site)
        else:
            del sites[site]
        if not sites:
            del self._tiers[tier]
        self._forget(item)
        return item

    def remove(self, item: Any) -> bool:
        sites = self._tiers.get(item.tier)
        devices = sites.get(_site(item)) if sites is not None else None
        items = devices.get(item.event.device) if devices is not None else None
        if items is None or item not in items:
            return False
        items.remove(item)
        if not items:
            del devices[item.event.device]
            if not devices:
                del sites[_site(item)]
                if not sites:
                    del self._tiers[item.tier]
        self._forget(item)
        return True

    def drain(self) -> list[Any]:
        out = list(self)
        self._tiers.clear()
        self._per_device.clear()
        self._len = 0
        return out

    def any(self, predicate: Callable[[Any], bool]) -> bool:
        return any(predicate(item) for item in self)

    def victim(self, newcomer: Any, eligible: Callable[[Any], bool]) -> Any | None:
        """What to give up for `newcomer` when full: the newest eligible item of a less urgent tier (of its
        busiest device); else, in the newcomer's own tier, the newest item of the busiest device if that
        device holds more than the newcomer's device would. None: the newcomer is the one to wait."""
        for tier in sorted((t for t in self._tiers if t >= newcomer.tier), reverse=True):
            ranked = sorted(((d, items) for devices in self._tiers[tier].values() for d, items in devices.items()),
                            key=lambda pair: self._per_device.get(pair[0], 0), reverse=True)
            for device, items in ranked:
                if tier == newcomer.tier and self.count(device) <= self.count(newcomer.event.device) + 1:
                    return None  # no device holds more than its share over the newcomer's
                for item in reversed(items):
                    if eligible(item):
                        return item
        return None

    def _forget(self, item: Any) -> None:
        device = item.event.device
        left = self._per_device.get(device, 0) - 1
        if left > 0:
            self._per_device[device] = left
        else:
            self._per_device.pop(device, None)
        self._len -= 1
