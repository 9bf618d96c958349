"""Which site each device is in, and the reuse keys the cloud computes itself: nothing a device merely claims
decides anything for another device.

Membership (`Sites.admit`): a device's site is the one `[reuse] sites` lists it in, never the event's word. An
event that names another site, or a configured site that does not list its device, is refused (ProtocolError,
code "site"). A device no site lists is in no site: a site it names that no site table knows is dropped (its
verdicts reach nobody else; a warning says how to list it).

Keys (`CloudKeys`): where a verdict may reach other devices (scope "site", an event of a listed device), the
event's perceptual hash is the cloud's own, of the JPEG it received (shared.cropkeys), and its appearance
embedding is the cloud's own too, made with the shipped MobileNetV2 only once the hash found nothing (a cache
miss: `embedded`). The embeddings of the last KNOWN_CROPS crops are kept by the crop's digest: the same JPEG
again (another device sends the very picture, a replay) has its embedding at once, so the cache can answer it on
arrival (`keyed`). The device's own hash and embedding are dropped there; they serve its own cache and its own
camera scope, where they reach nobody else. A crop the cloud cannot decode reaches no other device either.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import threading
from collections import OrderedDict

from ...shared.cropkeys import Appearance, decode_jpeg, phash_dct64
from ...shared.modelfiles import ModelError, resolve
from ...shared.onnx import open_session
from ...shared.protocol import Event, ProtocolError, Verdict
from ..config import ReusePolicy
from .cropquota import DeviceRoll
from .verdicts import site_offers

log = logging.getLogger("edgetriage.cloud.service")

APPEARANCE_MODEL = "mobilenet_v2_int8"  # the device's default embedder (edge.vision.classify)
KNOWN_CROPS = 4096  # crops whose embeddings are kept by digest (about 1.3 MB)


class Trust:
    """What the service takes from an event: its device among the ids it takes events from, its device's site
    and, where it reaches other devices, the cloud's own keys."""

    def __init__(self, policy: ReusePolicy, max_devices: int, known: set[str]) -> None:
        self.sites = Sites(policy)
        self.keys = CloudKeys(policy)
        self.devices = DeviceRoll(max_devices, {d for ds in policy.sites.values() for d in ds} | set(known))

    def admit(self, event: Event) -> Event:
        """The event in its device's site with the cloud's hash; ProtocolError when it names another site, or
        its device is one more than [delivery] max_devices (cloud.reuse.cropquota.DeviceRoll)."""
        self.devices.admit(event.device)
        return self.keys.keyed(self.sites.admit(event))

    async def embedded(self, event: Event) -> Event:
        """The event with the cloud's own embedding where it reaches other devices (CloudKeys.embedded)."""
        return await self.keys.embedded(event)


class Sites:
    """Which devices belong to which site: `[reuse] sites`, the operator's word, and nothing else."""

    def __init__(self, policy: ReusePolicy) -> None:
        self.policy = policy
        self._devices: dict[str, frozenset[str]] = {site: frozenset(devices) for site, devices in policy.sites.items()}
        self._site_of: dict[str, str] = {}
        for site, devices in sorted(policy.sites.items()):
            for device in devices:
                self._site_of.setdefault(device, site)
        self._warned: set[tuple[str, str]] = set()

    def devices(self, site: str) -> list[str]:
        return sorted(self._devices.get(site, ()))

    def offers(self, verdict: Verdict) -> list[Verdict]:
        """A new site-wide model verdict's offers to the other devices listed in its site (verdicts.site_offers)."""
        rule = verdict.cache
        return site_offers(self.policy, self.devices(rule.site) if rule is not None and rule.site else [], verdict)

    def site_of(self, device: str, named: str | None = None) -> str | None:
        """The device's site: the one `named` where the operator lists the device there, else the first
        site listing it, else None."""
        if named is not None and device in self._devices.get(named, ()):
            return named
        return self._site_of.get(device)

    def admit(self, event: Event) -> Event:
        """The event with the site its device belongs to; ProtocolError when it names another one."""
        site = self.site_of(event.device, event.site)
        if event.site is None or event.site == site:
            return event if event.site == site else event.model_copy(update={"site": site})
        if site is not None or event.site in self._devices:
            listed = f"site {site!r}" if site is not None else "no site"
            raise ProtocolError(f"device {event.device!r} names site {event.site!r}, but [reuse] sites puts it in "
                                f"{listed}; a device's site is the cloud's configuration, not the event's word",
                                code="site")
        if (event.device, event.site) not in self._warned and len(self._warned) < 1024:
            self._warned.add((event.device, event.site))
            log.warning("device %r names site %r, which [reuse] sites does not list: it shares verdicts with no "
                        "other device until the operator lists it there", event.device, event.site)
        return event.model_copy(update={"site": None})


class CloudKeys:
    """The perceptual hash and appearance embedding the cloud computes from an event's crop, for the events
    whose verdicts may reach other devices. With site scope the model is loaded at once, in the background,
    so the first cache miss does not wait for it."""

    def __init__(self, policy: ReusePolicy, model: str = APPEARANCE_MODEL) -> None:
        self.policy = policy
        self._model = model
        self._appearance: Appearance | None = None
        self._unavailable = False
        self._lock = threading.Lock()
        self._known: OrderedDict[bytes, bytes] = OrderedDict()  # crop digest -> embedding (the event loop's own)
        if policy.scope == "site":
            threading.Thread(target=self._load, name="appearance-load", daemon=True).start()

    def crosses_devices(self, event: Event) -> bool:
        """Whether this event's verdict, and the verdicts it may be answered with, reach other devices."""
        return self.policy.scope == "site" and event.site is not None

    def keyed(self, event: Event) -> Event:
        """The event with the cloud's own hash where it crosses devices, and the cloud's own embedding where it
        made one of this very JPEG before (else none yet: `embedded`); one whose crop does not decode keeps its
        own keys and no site, so they reach nobody else."""
        if not self.crosses_devices(event):
            return event
        image = decode_jpeg(event.crop)
        if image is None:
            return event.model_copy(update={"site": None})
        return event.model_copy(update={"phash": phash_dct64(image), "phash_alg": "dct64",
                                        "embedding": self._known.get(_digest(event.crop))})

    async def embedded(self, event: Event) -> Event:
        """A cross-device event with the cloud's own appearance embedding added (off the event loop); the
        event itself where it needs none, has one, or no embedding can be made."""
        if not self.crosses_devices(event) or event.embedding is not None:
            return event
        embedding = await asyncio.to_thread(self.embedding, event.crop)
        if embedding is None:
            return event
        digest = _digest(event.crop)
        self._known[digest] = embedding
        self._known.move_to_end(digest)
        if len(self._known) > KNOWN_CROPS:
            self._known.popitem(last=False)
        return event.model_copy(update={"embedding": embedding})

    def embedding(self, jpeg: bytes) -> bytes | None:
        """The crop's appearance embedding by the shipped MobileNetV2; None without the model or a picture."""
        appearance = self._load()
        return appearance.embed_jpeg(jpeg) if appearance is not None else None

    def _load(self) -> Appearance | None:
        with self._lock:
            if self._appearance is None and not self._unavailable:
                try:
                    model = resolve(self._model)
                    self._appearance = Appearance(model, open_session(model, 1, ["CPUExecutionProvider"]))
                except (ModelError, ImportError) as exc:
                    self._unavailable = True
                    log.warning("no appearance embedding in the cloud (%s): verdicts reach other devices of a "
                                "site by the cloud's perceptual hash only", exc)
            return self._appearance


def _digest(jpeg: bytes) -> bytes:
    return hashlib.blake2b(jpeg, digest_size=16).digest()
