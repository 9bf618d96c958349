"""Which site a device is in and which keys reach other devices (issue 40, cloud/reuse/trust.py), on their own: the
site table is the operator's word, never the event's; where a verdict crosses devices the hash is the cloud's
own of the JPEG it received and the device's embedding is dropped; the cloud's embedding of a picture is kept
by the picture's digest (newest kept, oldest dropped first). Real JPEGs (made here, no video), the shipped
MobileNetV2; no broker, no store. Seconds.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import cv2
import numpy as np
import pytest
from edgetriage.cloud.config import ReusePolicy
from edgetriage.cloud.reuse import trust
from edgetriage.cloud.reuse.trust import CloudKeys, Sites, Trust
from edgetriage.shared.cropkeys import decode_jpeg, phash_dct64
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Detection, Event, ProtocolError, ReuseRule, Verdict

DEVICE_HASH = "0123456789abcdef"
TWO_SITES = {"home": ["dev-a", "dev-b", "both"], "annex": ["both", "dev-c"]}


def _jpeg(seed: int) -> bytes:
    """A picture with something in it (its own pattern per seed), as a device would send its crop."""
    rng = np.random.default_rng(seed)
    image = cv2.resize(rng.integers(0, 255, (6, 4, 3), dtype=np.uint8), (120, 200), interpolation=cv2.INTER_CUBIC)
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()


JPEGS = [_jpeg(n) for n in range(3)]
BROKEN = b"\xff\xd8\xff" + b"\x00" * 64


def _event(device: str = "dev-a", site: str | None = "home", jpeg: bytes = JPEGS[0],
           embedding: bytes | None = None) -> Event:
    t = int(time.time() * 1000)
    return Event(event_id=uuid7(t), device=device, camera="door", site=site, captured_ms=t, label="person",
                 score=0.6, uncertain=True, track_id=1, reason="detector unsure", phash=DEVICE_HASH, crop=jpeg,
                 detections=[Detection(label="person", score=0.6, box=(0.4, 0.0, 0.7, 0.9))], embedding=embedding)


@pytest.fixture(scope="module")
def site_keys():
    """CloudKeys of a site-scoped cloud with the shipped model loaded."""
    keys = CloudKeys(ReusePolicy(scope="site", sites=TWO_SITES))
    assert keys.embedding(JPEGS[0]) is not None
    return keys


# -- the site table ----------------------------------------------------------------------------------------
def test_a_devices_site_is_the_one_named_where_listed_else_the_first_listing_it():
    sites = Sites(ReusePolicy(scope="site", sites=TWO_SITES))
    assert sites.site_of("both") == "annex"  # listed in two: the first by name
    assert sites.site_of("both", "home") == "home"  # the one it names, where it is listed
    assert sites.site_of("both", "garage") == "annex"
    assert sites.site_of("dev-a", "annex") == "home"  # named where it is not listed: its own
    assert sites.site_of("dev-z") is None and sites.site_of("dev-z", "home") is None
    assert sites.devices("home") == ["both", "dev-a", "dev-b"] and sites.devices("garage") == []


def test_an_event_is_put_in_its_devices_site_whatever_it_leaves_out():
    sites = Sites(ReusePolicy(scope="site", sites=TWO_SITES))
    assert sites.admit(_event("dev-a", site=None)).site == "home"  # said nothing: the table's word
    named = _event("both", site="home")
    assert sites.admit(named) is named  # already right: the event itself, not a copy
    assert sites.admit(_event("both", site="annex")).site == "annex"
    unlisted = _event("dev-z", site=None)
    assert sites.admit(unlisted) is unlisted


def test_naming_another_site_is_refused_with_the_tables_word(caplog):
    sites = Sites(ReusePolicy(scope="site", sites=TWO_SITES))
    with pytest.raises(ProtocolError) as other:
        sites.admit(_event("dev-a", site="annex"))
    assert other.value.code == "site"
    assert str(other.value) == ("device 'dev-a' names site 'annex', but [reuse] sites puts it in site 'home'; a "
                                "device's site is the cloud's configuration, not the event's word")
    with pytest.raises(ProtocolError) as unlisted:  # a configured site that does not list the device
        sites.admit(_event("dev-z", site="home"))
    assert unlisted.value.code == "site" and "puts it in no site;" in str(unlisted.value)
    assert caplog.records == []


def test_a_site_no_table_knows_is_dropped_and_said_once_per_device_and_site(caplog):
    sites = Sites(ReusePolicy(scope="site", sites=TWO_SITES))
    caplog.set_level(logging.WARNING, logger="edgetriage.cloud.service")
    for _ in range(2):
        assert sites.admit(_event("dev-z", site="garage")).site is None
    assert sites.admit(_event("dev-y", site="garage")).site is None
    assert [r.getMessage() for r in caplog.records] == [
        f"device {d!r} names site 'garage', which [reuse] sites does not list: it shares verdicts with no other "
        "device until the operator lists it there" for d in ("dev-z", "dev-y")]
    assert all(r.name == "edgetriage.cloud.service" for r in caplog.records)


def test_the_warnings_remembered_are_bounded(caplog):
    sites = Sites(ReusePolicy(scope="site"))
    caplog.set_level(logging.WARNING, logger="edgetriage.cloud.service")
    for n in range(1030):
        sites.admit(_event("dev-z", site=f"s{n}"))
    assert len(caplog.records) == 1024
    assert sites.admit(_event("dev-z", site="s1029")).site is None  # past the bound: dropped, not said
    assert len(caplog.records) == 1024 and len(sites._warned) == 1024


def _model_verdict(site: str | None, scope: str = "site") -> Verdict:
    rule = ReuseRule(scope=scope, device="both", camera="door", site=site, label="person", phash=DEVICE_HASH,
                     prompt_version="p")
    return Verdict(event_id=uuid7(), device="both", camera="door", label="person", verdict="benign",
                   confidence=0.9, description="a coat", model="m", created_ms=int(time.time() * 1000), cache=rule)


def test_a_site_wide_verdict_is_offered_to_the_other_devices_of_its_rules_site():
    sites = Sites(ReusePolicy(scope="site", sites=TWO_SITES))
    offers = sites.offers(_model_verdict("home"))
    assert [o.device for o in offers] == ["dev-a", "dev-b"]
    assert [o.device for o in sites.offers(_model_verdict("annex"))] == ["dev-c"]
    assert sites.offers(_model_verdict(None, scope="camera")) == []
    assert sites.offers(_model_verdict("home").model_copy(update={"cache": None})) == []


# -- membership and the device roll --------------------------------------------------------------------------
def test_trust_takes_events_from_listed_and_known_devices_and_at_most_max_devices():
    policy = ReusePolicy(scope="site", sites={"home": ["dev-a"]})
    roll = Trust(policy, 2, {"dev-k"})
    roll.admit(_event("dev-k", site=None))
    admitted = roll.admit(_event("dev-a", site=None))
    assert admitted.site == "home" and admitted.phash == phash_dct64(decode_jpeg(JPEGS[0]))
    with pytest.raises(ProtocolError) as refused:  # the site's device and the known one fill the roll
        roll.admit(_event("dev-new", site=None))
    assert refused.value.code == "devices" and roll.devices.refused == 1
    with pytest.raises(ProtocolError):
        Trust(policy, 1, set()).admit(_event("dev-new", site=None))  # dev-a is on the roll from the table
    Trust(policy, 2, set()).admit(_event("dev-new", site=None))
    with pytest.raises(ProtocolError) as named:
        Trust(policy, 10, set()).admit(_event("dev-a", site="annex"))
    assert named.value.code == "site"


def test_trust_gives_a_cross_device_event_the_clouds_embedding(site_keys):
    policy = ReusePolicy(scope="site", sites=TWO_SITES)
    roll = Trust(policy, 10, set())
    event = roll.admit(_event("dev-a", site=None, jpeg=JPEGS[1], embedding=b"\x01" * 256))
    assert event.embedding is None  # the device's own dropped
    assert asyncio.run(roll.embedded(event)).embedding == site_keys.embedding(JPEGS[1])


# -- the cloud's own keys ------------------------------------------------------------------------------------
def test_only_site_scoped_events_of_a_site_cross_devices():
    site, camera = CloudKeys(ReusePolicy(scope="site")), CloudKeys(ReusePolicy(scope="camera"))
    assert site.crosses_devices(_event(site="home"))
    assert not site.crosses_devices(_event(site=None))
    assert not camera.crosses_devices(_event(site="home"))


def test_a_crossing_event_carries_the_clouds_hash_and_no_device_embedding(site_keys):
    keyed = site_keys.keyed(_event(jpeg=JPEGS[2], embedding=b"\x01" * 256))
    assert keyed.phash == phash_dct64(decode_jpeg(JPEGS[2])) != DEVICE_HASH
    assert keyed.phash_alg == "dct64" and keyed.embedding is None and keyed.site == "home"


def test_an_event_that_reaches_nobody_else_keeps_its_own_keys(site_keys):
    own = _event(site=None, embedding=b"\x01" * 256)
    assert site_keys.keyed(own) is own
    camera = CloudKeys(ReusePolicy(scope="camera"))
    scoped = _event(embedding=b"\x01" * 256)
    assert camera.keyed(scoped) is scoped
    assert asyncio.run(camera.embedded(scoped.model_copy(update={"embedding": None}))).embedding is None
    broken = site_keys.keyed(_event(jpeg=BROKEN, embedding=b"\x01" * 256))
    assert (broken.site, broken.phash, broken.embedding) == (None, DEVICE_HASH, b"\x01" * 256)


def test_an_event_with_an_embedding_or_no_picture_is_not_embedded_again(site_keys):
    has = _event(jpeg=JPEGS[0], embedding=b"\x02" * 256)
    assert asyncio.run(site_keys.embedded(has)) is has
    no_picture = _event(jpeg=BROKEN)
    assert asyncio.run(site_keys.embedded(no_picture)) is no_picture


def test_the_clouds_embeddings_are_kept_by_digest_newest_kept_oldest_dropped(site_keys, monkeypatch):
    monkeypatch.setattr(trust, "KNOWN_CROPS", 2)
    keys = CloudKeys(ReusePolicy(scope="site"))
    keys._appearance = site_keys._appearance  # the model loaded once for the module

    def known(jpeg: bytes) -> bool:
        return keys.keyed(_event(jpeg=jpeg)).embedding is not None

    a, b, c = JPEGS
    first = asyncio.run(keys.embedded(keys.keyed(_event(jpeg=a))))
    assert first.embedding == site_keys.embedding(a) and known(a) and not known(b)
    asyncio.run(keys.embedded(_event(jpeg=b)))
    assert known(a) and known(b)  # two kept of two
    asyncio.run(keys.embedded(_event(jpeg=a)))  # a again: now the newest
    asyncio.run(keys.embedded(_event(jpeg=c)))
    assert known(a) and known(c) and not known(b)  # the oldest (b) dropped
    assert keys.keyed(_event(jpeg=c)).embedding == site_keys.embedding(c)


def test_the_newest_4096_pictures_are_known_on_arrival(monkeypatch):
    """The bound itself (about 1.3 MB): the embedding is not what is tested here, so it is a fixed one."""
    keys = CloudKeys(ReusePolicy(scope="camera"))
    monkeypatch.setattr(keys, "policy", ReusePolicy(scope="site"))  # no model loaded for this one
    keys.embedding = lambda jpeg: b"\x05" * 256
    pictures = [JPEGS[0][:2] + b"\xff\xfe\x00\x06" + n.to_bytes(4, "big") + JPEGS[0][2:] for n in range(4097)]

    async def embed_all() -> None:
        for jpeg in pictures:
            await keys.embedded(_event(jpeg=jpeg))

    asyncio.run(embed_all())
    assert keys.keyed(_event(jpeg=pictures[0])).embedding is None  # the oldest: dropped
    assert keys.keyed(_event(jpeg=pictures[1])).embedding == b"\x05" * 256
    assert keys.keyed(_event(jpeg=pictures[-1])).embedding == b"\x05" * 256


def _loaded(name: str = "appearance-load") -> None:
    """Wait for the model's background load; it must not hold the process open at exit (a daemon)."""
    for thread in threading.enumerate():
        if thread.name == name:
            assert thread.daemon
            thread.join(30)


def test_without_the_model_nothing_is_embedded_and_it_is_said_once(caplog):
    caplog.set_level(logging.WARNING, logger="edgetriage.cloud.service")
    keys = CloudKeys(ReusePolicy(scope="camera"), model="no-such-model")
    assert caplog.records == []  # camera scope: nothing loaded before it is needed
    assert keys.embedding(JPEGS[0]) is None and keys.embedding(JPEGS[1]) is None
    (said,) = caplog.records
    assert said.getMessage().startswith("no appearance embedding in the cloud (model 'no-such-model': ")
    assert said.getMessage().endswith("verdicts reach other devices of a site by the cloud's perceptual hash only")
    site = CloudKeys(ReusePolicy(scope="site"), model="no-such-model")
    _loaded()  # site scope: loaded at once, in the background
    assert len(caplog.records) == 2 and site._unavailable
    assert asyncio.run(site.embedded(_event())).embedding is None


def test_a_site_scoped_cloud_loads_its_model_before_the_first_miss():
    keys = CloudKeys(ReusePolicy(scope="site"))
    _loaded()
    assert keys._appearance is not None
    assert keys._appearance is keys._load()  # loaded once
