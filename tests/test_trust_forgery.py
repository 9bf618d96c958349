"""A site member cannot forge its neighbours' answers (issue 40): the cloud's perceptual hash reads only the 8x8
low-frequency block of a 32x32 grey image, so dev-a pastes that block of dev-b's real visitor onto an empty
background of dev-b's view: a crop with nobody in it within 2 bits of the visitor's hash. Against a real cloud on
its own Mosquitto (SQLite and Redis), `[reuse] scope = "site"`, a model that answers by the shipped detector
(the translator's person score, as the check reads it): the forgery is benign, and answers neither dev-b's
visitor in the cloud's cache nor, through the site offer, in dev-b's own cache. The same visitor seen by two
devices is still answered across them (hash, embedding and the cloud's person evidence all agree).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import cv2
import numpy as np
import pytest
from edgetriage.cloud.analysis import Analysis
from edgetriage.cloud.analysis.translator import Translator
from edgetriage.cloud.config import CloudConfig
from edgetriage.cloud.reuse.trust import CloudKeys
from edgetriage.edge.triage.verdict_cache import VerdictCache as DeviceCache
from edgetriage.shared.cropkeys import decode_jpeg, phash_dct64
from edgetriage.shared.embedding import similarity
from edgetriage.shared.phash import hamming
from edgetriage.shared.policycell import EventFacts
from edgetriage.shared.protocol import Event, ReuseRule
from edgetriage.shared.reuse import SAME_PICTURE, agrees, same_picture
from test_trust_keys import Listener, _event, _run, _service


class ByDetector:
    """The scheduler's Backend: "alert" where the shipped detector sees a person in the crop, else "benign",
    with the detector's score as the cloud's closer look records it (`person_score`)."""

    name = "by-detector"
    max_batch = 1
    concurrency = 1

    def __init__(self, translator: Translator) -> None:
        self.translator = translator
        self.started: list[str] = []

    def prompt_version(self, event: object) -> str:
        return "detector-1"

    def saturated(self) -> bool:
        return False

    async def analyze_batch(self, events: Sequence[Event]) -> list[Analysis]:
        out = []
        for event in events:
            self.started.append(event.event_id)
            score = (await asyncio.to_thread(self.translator.translate, event)).label_score
            out.append(Analysis(verdict="alert" if score >= 0.5 else "benign", confidence=0.9, description="",
                                model=self.name, prompt_version="detector-1", analyze_ms=1.0,
                                extra={"person_score": score}))
        return out

    async def close(self) -> None:
        return None


def _grey32(image: np.ndarray) -> np.ndarray:
    return cv2.resize(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), (32, 32), interpolation=cv2.INTER_AREA).astype(
        np.float32)


def forge(background: np.ndarray, victim: np.ndarray) -> bytes:
    """The background with the victim's 8x8 low-frequency DCT block swapped in (as a smooth shading over it)."""
    dct = cv2.dct(_grey32(background))
    dct[:8, :8] = cv2.dct(_grey32(victim))[:8, :8]
    shading = cv2.resize(cv2.idct(dct) - _grey32(background), (background.shape[1], background.shape[0]),
                         interpolation=cv2.INTER_CUBIC)
    forged = np.clip(background.astype(np.float32) + shading[..., None], 0, 255).astype(np.uint8)
    return cv2.imencode(".jpg", forged, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator()


@pytest.fixture(scope="module")
def scene(clip_one_by_one) -> tuple[bytes, bytes, bytes]:
    """(dev-b's visitor as dev-b sends it, dev-b's embedding of it, dev-a's forgery of it)."""
    frames = []
    for ms in (3_000, 12_000):  # the empty spot, then the first visitor standing there
        cap = cv2.VideoCapture(str(clip_one_by_one))
        cap.set(cv2.CAP_PROP_POS_MSEC, ms)
        ok, frame = cap.read()
        cap.release()
        assert ok
        frames.append(frame[0:400, 370:560].copy())
    empty, visitor = frames
    jpeg = cv2.imencode(".jpg", visitor, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()
    embedding = CloudKeys(CloudConfig().reuse).embedding(jpeg)
    assert embedding is not None
    return jpeg, embedding, forge(empty, visitor)


def _facts(people: int) -> EventFacts:
    return EventFacts(23 * 60 + 10, 0, frozenset({"back-garden"}), -1.0, "", people)


@pytest.mark.parametrize("redis", [False, True], ids=["sqlite", "redis"])
def test_a_forged_low_frequency_block_answers_no_neighbour(mosquitto, prefix, tmp_path, translator, scene, redis):
    jpeg, embedding, forged = scene
    real_hash = phash_dct64(decode_jpeg(jpeg))
    assert hamming(phash_dct64(decode_jpeg(forged)), real_hash) <= 4  # the forgery the issue describes
    model = ByDetector(translator)
    service, store = _service(mosquitto, prefix, tmp_path, {"home": ["dev-a", "dev-b"]}, model, redis)

    async def scenario() -> None:
        bus = Listener(mosquitto.url, prefix, ["dev-a", "dev-b"])
        try:
            bait = _event("dev-a", forged, real_hash, embedding=embedding, camera="gate")
            bus.publish(bait)
            made = await bus.verdict_for(bait)
            assert (made.verdict, made.cache.person_seen) == ("benign", False)
            offered = await bus.verdict_for(bait.model_copy(update={"device": "dev-b"}))
            cache = DeviceCache()
            assert cache.add(offered, int(time.time() * 1000))
            assert cache.lookup(device="dev-b", camera="door", site="home", label="person", phash=real_hash,
                                now_ms=int(time.time() * 1000), embedding=embedding, facts=_facts(1)) is None
            victim = _event("dev-b", jpeg, real_hash, embedding=embedding, n=1)
            bus.publish(victim)
            answer = await bus.verdict_for(victim)
            assert (answer.verdict, answer.source, answer.reused_from) == ("alert", "llm", None)
            assert answer.cache.person_seen is True
            # the same visitor seen by a third camera of dev-a: all three signals agree, so it is reused
            seen_again = _event("dev-a", jpeg, real_hash, camera="drive", n=2)
            bus.publish(seen_again)
            reused = await bus.verdict_for(seen_again)
            assert (reused.verdict, reused.source, reused.reused_from) == ("alert", "cloud_cache", victim.event_id)
            assert model.started == [bait.event_id, victim.event_id]
        finally:
            bus.close()

    _run(service, store, scenario)


@pytest.mark.parametrize("redis", [False, True], ids=["sqlite", "redis"])
def test_one_picture_sent_by_two_devices_is_judged_once(mosquitto, prefix, tmp_path, translator, clip_one_by_one,
                                                        redis):
    """A person the cloud's detector misses (behind a fogged lens: person score under 0.10) is judged by the model
    once: the same picture from a neighbour is that judgement's (one hash to the bit, one embedding), while a
    frame 1 s later (the same person, another picture) still goes to the model."""
    cap = cv2.VideoCapture(str(clip_one_by_one))
    pictures = []
    for ms in (12_000, 13_000):
        cap.set(cv2.CAP_PROP_POS_MSEC, ms)
        ok, frame = cap.read()
        assert ok
        fogged = cv2.GaussianBlur(frame[0:400, 370:560], (0, 0), 12)
        pictures.append(cv2.imencode(".jpg", fogged, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes())
    cap.release()
    first, later = pictures
    keys = CloudKeys(CloudConfig().reuse)
    assert similarity(keys.embedding(first), keys.embedding(later)) < SAME_PICTURE
    model = ByDetector(translator)
    service, store = _service(mosquitto, prefix, tmp_path, {"home": ["dev-a", "dev-b"]}, model, redis)

    async def scenario() -> None:
        bus = Listener(mosquitto.url, prefix, ["dev-a", "dev-b"])
        try:
            seen = _event("dev-a", first, phash_dct64(decode_jpeg(first)), camera="gate")
            bus.publish(seen)
            made = await bus.verdict_for(seen)
            assert (made.source, made.cache.person_seen) == ("llm", False)  # the detector saw nobody there
            again = _event("dev-b", first, "0" * 16, n=1)  # the device's own hash is not the cloud's
            bus.publish(again)
            reused = await bus.verdict_for(again)
            assert (reused.verdict, reused.source, reused.reused_from) == (made.verdict, "cloud_cache", seen.event_id)
            moved = _event("dev-b", later, phash_dct64(decode_jpeg(later)), n=2)
            bus.publish(moved)
            assert (await bus.verdict_for(moved)).source == "llm"
            assert model.started == [seen.event_id, moved.event_id]
        finally:
            bus.close()

    _run(service, store, scenario)


def test_another_devices_rule_needs_hash_embedding_and_person_evidence(scene):
    """shared.reuse.agrees, each signal alone: a rule of dev-a's answers dev-b only with all three."""
    jpeg, embedding, _ = scene
    phash = phash_dct64(decode_jpeg(jpeg))
    rule = ReuseRule(scope="site", device="dev-a", camera="gate", site="home", label="person", phash=phash,
                     prompt_version="p", embedding=embedding, person_seen=True)
    assert agrees(rule, "dev-b", phash, embedding, people=True)
    assert agrees(rule, "dev-a", phash, None, people=True)  # its own device: its own keys
    assert not agrees(rule, "dev-b", phash, None, people=True)  # no embedding to agree
    far = f"{int(phash, 16) ^ 0x1FF:016x}"  # 9 bits away
    assert not agrees(rule, "dev-b", far, embedding, people=True)
    near = f"{int(phash, 16) ^ 1:016x}"  # a look 1 bit away: agrees by hash and embedding, not one picture
    assert agrees(rule, "dev-b", near, embedding, people=True)
    assert not agrees(rule.model_copy(update={"person_seen": False}), "dev-b", near, embedding, people=True)
    assert not agrees(rule.model_copy(update={"person_seen": None}), "dev-b", near, embedding, people=True)
    assert agrees(rule.model_copy(update={"person_seen": False}), "dev-b", near, embedding, people=False)


def test_only_the_same_picture_answers_a_person_across_a_crop_found_person_free(scene):
    """A rule whose crop the cloud found person-free answers another device's person only where both crops are
    one picture by the cloud's keys (shared.reuse.same_picture): the same hash to the bit and the same
    embedding. The forgery's embedding is far from its victim's even where the forger hits the hash exactly."""
    jpeg, embedding, forged = scene
    phash = phash_dct64(decode_jpeg(jpeg))
    forged_embedding = CloudKeys(CloudConfig().reuse).embedding(forged)
    bait = ReuseRule(scope="site", device="dev-a", camera="gate", site="home", label="person", phash=phash,
                     prompt_version="p", embedding=forged_embedding, min_similarity=0.5, person_seen=False)
    assert similarity(forged_embedding, embedding) < 0.9
    assert not same_picture(phash, phash, similarity(forged_embedding, embedding))
    assert not agrees(bait, "dev-b", phash, embedding, people=True)  # a hash hit exactly and a loose rule
    honest = bait.model_copy(update={"embedding": embedding, "min_similarity": 0.97})
    assert agrees(honest, "dev-b", phash, embedding, people=True)  # the very picture the model judged
    one_bit = f"{int(phash, 16) ^ 1:016x}"
    assert not agrees(honest, "dev-b", one_bit, embedding, people=True)  # within max_distance, not one picture
    assert not same_picture(phash, phash, SAME_PICTURE - 0.001) and same_picture(phash, phash, SAME_PICTURE)


def test_the_cloud_knows_a_picture_it_embedded_before_on_arrival(scene):
    """The cloud's embedding of a JPEG is kept by the JPEG's digest: the very picture again, from any device, has
    it as soon as it arrives (so the cache answers it there), while another picture waits for its own."""
    jpeg, embedding, forged = scene
    keys = CloudKeys(CloudConfig.model_validate({"reuse": {"scope": "site"}}).reuse)
    first = keys.keyed(_event("dev-a", jpeg, "0" * 16, camera="gate"))
    assert first.embedding is None and first.phash == phash_dct64(decode_jpeg(jpeg))
    assert asyncio.run(keys.embedded(first)).embedding == embedding
    assert keys.keyed(_event("dev-b", jpeg, "0" * 16, n=1)).embedding == embedding
    assert keys.keyed(_event("dev-b", forged, "0" * 16, n=2)).embedding is None
    assert keys.keyed(_event("dev-b", jpeg, "0" * 16, site=None, n=3)).embedding is None  # crosses no device
