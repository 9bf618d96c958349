"""Property-based tests on every decoder of input that arrives from outside the process: events and verdicts
(MQTT and HTTP), the JPEG header read before any crop is decoded, topic names, remote configuration messages
and a model server's answer. Over 10,000 generated and mutated messages in all (see FUZZ_TOTAL), starting
from real ones: a real crop from the sample clip, a real verdict, a real config message.

What must hold for every input: the decoder returns or raises its own error type with a reason (ProtocolError
also with a code from REJECT_CODES), never anything else (an exception escaping into a message loop stops
it); and whatever it accepts is within every limit."""

from __future__ import annotations

import json
import os

import cv2
import msgpack
import pytest
from edgetriage.cloud.analysis.answer import AnswerError, parse_answer
from edgetriage.edge.config import EdgeConfig
from edgetriage.edge.remote_config import RemoteRefused, parse_update
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import (
    MAX_CROP_PIXELS,
    MAX_DETECTIONS,
    MAX_EVENT_BYTES,
    MAX_VERDICT_BYTES,
    REJECT_CODES,
    Detection,
    Event,
    ProtocolError,
    ReuseRule,
    Timings,
    Verdict,
    decode_event,
    decode_verdict,
    encode_event,
    encode_verdict,
    jpeg_size,
)
from edgetriage.shared.topics import KINDS, Topics
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# Examples per test; the sum is the number of messages generated (a CI run can raise FUZZ_SCALE).
SCALE = float(os.environ.get("FUZZ_SCALE", "1"))
N = {name: int(n * SCALE) for name, n in {
    "event_bytes": 2500, "event_mutated": 2000, "event_fields": 800, "event_limits": 400,
    "verdict_text": 2000, "verdict_fields": 800, "jpeg_header": 1500, "topic": 1000,
    "remote_config": 600, "model_answer": 400,
}.items()}
FUZZ_TOTAL = sum(N.values())


def _settings(name: str):
    return settings(max_examples=N[name], deadline=None, derandomize=False, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


# -- real starting points --------------------------------------------------------------------------------------
def _real_crop() -> tuple[bytes, tuple[int, int]]:
    from edgetriage.shared.modelfiles import bundled_clip

    path = str(bundled_clip())
    cap = cv2.VideoCapture(path)
    cap.set(cv2.CAP_PROP_POS_MSEC, 30_000)
    ok, frame = cap.read()
    cap.release()
    assert ok, f"cannot read a frame of {path}"
    crop = cv2.resize(frame[0:400, 370:560], (95, 200))  # small, so a mutation often lands in the header
    jpeg = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, 80])[1].tobytes()
    return jpeg, (crop.shape[1], crop.shape[0])


JPEG, JPEG_SIZE = _real_crop()
EVENT = Event(event_id=uuid7(1_760_000_000_000), device="pi-lab-1", camera="hall", site="lab",
              captured_ms=1_760_000_000_000, label="person", score=0.41, uncertain=True, track_id=3,
              detections=[Detection(label="person", score=0.41, box=(0.48, 0.0, 0.73, 0.93))],
              phash="0f0f33cc0f0f33cc", reason="uncertain score 0.41", crop=JPEG, crop_size=JPEG_SIZE)
EVENT_BYTES = encode_event(EVENT)
EVENT_MAP = EVENT.model_dump(by_alias=True)
VERDICT = Verdict(event_id=EVENT.event_id, device="pi-lab-1", camera="hall", label="person", verdict="benign",
                  confidence=0.8, description="a person standing by the shelves", model="smollm2-135m",
                  created_ms=1_760_000_000_900, timings=Timings(queue_ms=1.0, analyze_ms=2900.5, total_ms=2903.0),
                  cache=ReuseRule(device="pi-lab-1", camera="hall", site="lab", label="person",
                                  phash="0f0f33cc0f0f33cc", prompt_version="p1"))
VERDICT_BYTES = encode_verdict(VERDICT)
VERDICT_MAP = json.loads(VERDICT_BYTES)
BASE_CONFIG = EdgeConfig.model_validate({"device": "pi-lab-1", "cameras": [{"id": "hall", "source": "0"}],
                                         "state_dir": "/tmp/edgetriage-fuzz"})
CONFIG_MSG = {"version": "v7", "config": {"rules": {"min_score": 0.3, "uncertain_band": [0.2, 0.45]},
                                          "cameras": {"hall": {"detect_fps": 2}}, "budget": {"per_minute": 5}},
              "model": {"sha256": "a" * 64, "name": "ssdlite"}}
TOPICS = Topics("edgetriage")


# -- what every outcome must satisfy ---------------------------------------------------------------------------
def _event_outcome(data: bytes) -> Event | None:
    try:
        event = decode_event(data)
    except ProtocolError as exc:
        assert exc.reason and exc.code in REJECT_CODES, (exc.reason, exc.code)
        assert len(exc.reason) < 1000  # a reason fits a log line, whatever the input
        return None
    # accepted: within every limit, and what it says about its crop is true
    assert len(data) <= MAX_EVENT_BYTES
    real = jpeg_size(event.crop)
    assert real is not None and 0 < real[0] * real[1] <= MAX_CROP_PIXELS
    assert event.crop_size in ((0, 0), real)
    assert len(event.detections) <= MAX_DETECTIONS and len(event.reason) <= 256
    assert decode_event(encode_event(event)) == event
    return event


def _verdict_outcome(data: bytes) -> Verdict | None:
    try:
        verdict = decode_verdict(data)
    except ProtocolError as exc:
        assert exc.reason and exc.code in REJECT_CODES, (exc.reason, exc.code)
        assert len(exc.reason) < 1000
        return None
    assert len(data) <= MAX_VERDICT_BYTES
    assert decode_verdict(encode_verdict(verdict)) == verdict  # what is accepted can be passed on as valid JSON
    return verdict


def _mutate(data: bytes, draw) -> bytes:
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 6), label="mutations")):
        if not out:
            break
        kind = draw(st.sampled_from(["flip", "set", "cut", "insert", "dup", "truncate"]))
        at = draw(st.integers(0, len(out) - 1))
        if kind == "flip":
            out[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":
            out[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xC0, 0xC1, 0xD9, 0xDA, 0xDB, 0xDC, 0xDE, 0xFF]))
        elif kind == "cut":
            del out[at:at + draw(st.integers(1, 64))]
        elif kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "dup":
            out[at:at] = out[at:at + draw(st.integers(1, 256))]
        else:
            del out[at:]
    return bytes(out)


_scalars = (st.none() | st.booleans() | st.integers(-(1 << 64), 1 << 64) | st.floats(allow_nan=True)
            | st.text(max_size=40) | st.binary(max_size=40))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=6)


# -- events ----------------------------------------------------------------------------------------------------
@_settings("event_bytes")
@given(st.binary(max_size=4096) | st.binary(min_size=1, max_size=8).map(lambda b: b * 600))
def test_arbitrary_bytes_as_an_event(data):
    _event_outcome(data)


@_settings("event_mutated")
@given(st.data())
def test_mutated_real_events(data):
    """Bit flips, cuts, insertions and truncations of a real event, crop bytes and JPEG header included."""
    target = data.draw(st.sampled_from(["message", "crop", "both"]))
    payload = EVENT_BYTES
    if target in ("crop", "both"):
        crop = _mutate(JPEG[:600], data.draw) + JPEG[600:]  # the header lives in the first few hundred bytes
        payload = msgpack.packb({**EVENT_MAP, "crop": crop}, use_bin_type=True)
    if target in ("message", "both"):
        payload = _mutate(payload, data.draw)
    _event_outcome(payload)


@_settings("event_fields")
@given(st.data())
def test_events_with_fields_replaced_by_anything(data):
    obj = dict(EVENT_MAP)
    for key in data.draw(st.lists(st.sampled_from(sorted(obj) + ["extra", "v"]), min_size=1, max_size=4,
                                  unique=True)):
        obj[key] = data.draw(_values, label=key)
    try:
        payload = msgpack.packb(obj, use_bin_type=True)
    except (TypeError, ValueError, OverflowError):
        return  # not expressible as MessagePack (an int beyond 64 bits): nothing a sender could send
    _event_outcome(payload)


@_settings("event_limits")
@given(st.data())
def test_events_at_and_beyond_every_limit(data):
    """Values at each limit and one past it: string lengths, list lengths, the 2^53 integer range, the pixel
    limit claimed in crop_size and declared in the JPEG header, the message size."""
    obj = dict(EVENT_MAP)
    field = data.draw(st.sampled_from(["reason", "label", "detections", "classes", "captured_ms", "track_id",
                                       "crop_size", "sof", "size", "device", "phash"]))
    if field == "reason":
        obj["reason"] = "r" * data.draw(st.integers(250, 260))
    elif field == "label":
        obj["label"] = "p" * data.draw(st.integers(60, 70))
    elif field == "detections":
        det = EVENT_MAP["detections"][0]
        obj["detections"] = [det] * data.draw(st.integers(MAX_DETECTIONS - 2, MAX_DETECTIONS + 2))
    elif field == "classes":
        obj["classes"] = [{"label": "x" * data.draw(st.integers(126, 130)), "score": 0.5}] * data.draw(
            st.integers(9, 11))
    elif field in ("captured_ms", "track_id"):
        obj[field] = data.draw(st.sampled_from([-1, 0, (1 << 53) - 1, 1 << 53, (1 << 63) - 1]))
    elif field == "crop_size":
        side = data.draw(st.integers(4090, 4100))
        obj["crop_size"] = [side, data.draw(st.integers(4090, 4100))]
    elif field == "sof":  # the JPEG header says something else than the real image
        w, h = data.draw(st.integers(0, 65535)), data.draw(st.integers(0, 65535))
        crop = bytearray(JPEG)
        at = next(i for i in range(2, len(crop) - 9) if crop[i] == 0xFF and crop[i + 1] in (0xC0, 0xC2))
        crop[at + 5:at + 9] = bytes([h >> 8, h & 255, w >> 8, w & 255])
        obj["crop"] = bytes(crop)
        obj["crop_size"] = data.draw(st.sampled_from([[0, 0], [w, h], list(JPEG_SIZE)]))
    elif field == "size":
        obj["crop"] = JPEG + bytes(data.draw(st.integers(MAX_EVENT_BYTES - len(EVENT_BYTES) - 64,
                                                         MAX_EVENT_BYTES - len(EVENT_BYTES) + 64)))
    elif field == "device":
        obj["device"] = data.draw(st.sampled_from(["a" * 64, "a" * 65, "A", "a/b", "+", "#", "", "_cloud"]))
    else:
        obj["phash"] = data.draw(st.sampled_from(["0" * 15, "0" * 16, "0" * 17, "G" * 16, "0f0f33cc0f0f33cC"]))
    _event_outcome(msgpack.packb(obj, use_bin_type=True))


def test_known_event_refusals_carry_their_code():
    cases = {
        "too_large": b"\x00" * (MAX_EVENT_BYTES + 1),
        "encoding": b"\x91" * 50_000,  # nested deeper than the unpacker allows
        "schema_version": msgpack.packb({**EVENT_MAP, "v": True}, use_bin_type=True),
        "invalid": msgpack.packb({**EVENT_MAP, "device": "Not A Device"}, use_bin_type=True),
        "image": msgpack.packb({**EVENT_MAP, "crop": b"\xff\xd8\xff\xda" + bytes(64)}, use_bin_type=True),
    }
    for code, payload in cases.items():
        with pytest.raises(ProtocolError) as err:
            decode_event(payload)
        assert err.value.code == code, (code, err.value.reason)
    bomb = bytearray(JPEG)
    at = next(i for i in range(2, len(bomb) - 9) if bomb[i] == 0xFF and bomb[i + 1] in (0xC0, 0xC2))
    bomb[at + 5:at + 9] = bytes([0xFF, 0xFF, 0xFF, 0xFF])  # 65535 x 65535 declared in a 10 KB file
    with pytest.raises(ProtocolError, match="over the .*-pixel limit") as err:
        decode_event(msgpack.packb({**EVENT_MAP, "crop": bytes(bomb), "crop_size": [0, 0]}, use_bin_type=True))
    assert err.value.code == "image"
    with pytest.raises(ProtocolError, match="crop_size says"):
        decode_event(msgpack.packb({**EVENT_MAP, "crop_size": [JPEG_SIZE[0] + 1, JPEG_SIZE[1]]}, use_bin_type=True))


# -- verdicts --------------------------------------------------------------------------------------------------
@_settings("verdict_text")
@given(st.data())
def test_arbitrary_and_mutated_verdict_text(data):
    kind = data.draw(st.sampled_from(["bytes", "text", "mutated", "nested"]))
    if kind == "bytes":
        payload = data.draw(st.binary(max_size=2048))
    elif kind == "text":
        payload = data.draw(st.text(max_size=1024)).encode("utf-8", "surrogatepass")
    elif kind == "mutated":
        payload = _mutate(VERDICT_BYTES, data.draw)
    else:
        depth = data.draw(st.integers(1, 8000))
        opener = data.draw(st.sampled_from(["[", '{"a":']))
        payload = (opener * depth).encode()
    _verdict_outcome(payload)


@_settings("verdict_fields")
@given(st.data())
def test_verdicts_with_fields_replaced_by_anything(data):
    obj = json.loads(VERDICT_BYTES)
    for key in data.draw(st.lists(st.sampled_from(sorted(obj) + ["extra"]), min_size=1, max_size=4, unique=True)):
        obj[key] = data.draw(_values.filter(lambda v: not isinstance(v, bytes)), label=key)
    nested = data.draw(st.sampled_from([None, "timings", "cache"]))
    if nested and isinstance(VERDICT_MAP.get(nested), dict):
        inner = dict(VERDICT_MAP[nested])
        inner[data.draw(st.sampled_from(sorted(inner)))] = data.draw(
            st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(1 << 70), 1 << 70) | st.text(max_size=40))
        obj[nested] = inner
    try:
        payload = json.dumps(obj).encode()  # NaN and Infinity included: Python's json writes them
    except (TypeError, ValueError):
        return
    _verdict_outcome(payload)


# -- the JPEG header reader ------------------------------------------------------------------------------------
@_settings("jpeg_header")
@given(st.data())
def test_jpeg_header_reader_never_fails_and_reads_real_sizes(data):
    source = data.draw(st.sampled_from(["mutated", "random", "segments"]))
    if source == "mutated":
        blob = _mutate(JPEG[:800], data.draw)
    elif source == "random":
        blob = data.draw(st.binary(max_size=512))
    else:  # well-formed marker segments with random contents, maybe a frame header among them
        parts = [b"\xff\xd8"]
        for _ in range(data.draw(st.integers(0, 6))):
            marker = data.draw(st.integers(0xC0, 0xFE))
            body = data.draw(st.binary(max_size=40))
            parts.append(bytes([0xFF, marker, (len(body) + 2) >> 8, (len(body) + 2) & 255]) + body)
        blob = b"".join(parts)
    size = jpeg_size(blob)
    assert size is None or (isinstance(size, tuple) and all(0 <= v <= 65535 for v in size))


def test_jpeg_header_reader_agrees_with_the_decoder():
    for w, h in ((1, 1), (95, 200), (320, 240), (17, 333)):
        image = cv2.resize(cv2.imdecode(__import__("numpy").frombuffer(JPEG, "uint8"), cv2.IMREAD_COLOR), (w, h))
        for params in ([cv2.IMWRITE_JPEG_QUALITY, 90], [cv2.IMWRITE_JPEG_PROGRESSIVE, 1]):
            assert jpeg_size(cv2.imencode(".jpg", image, params)[1].tobytes()) == (w, h)
    assert jpeg_size(b"\x89PNG\r\n\x1a\n") is None and jpeg_size(JPEG[:20]) is None


# -- topics ----------------------------------------------------------------------------------------------------
@_settings("topic")
@given(st.one_of(st.text(max_size=120),
                 st.lists(st.sampled_from(["edgetriage", "v1", "v2", "pi-1", "", "+", "#", "$share", *KINDS]),
                          max_size=6).map("/".join)))
def test_topic_parser(topic):
    parsed = TOPICS.parse(topic)
    if parsed is not None:
        device, kind = parsed
        assert kind in KINDS and device and "/" not in device
        assert topic == f"edgetriage/v1/{device}/{kind}"


# -- remote configuration (the retained <device>/config message) -----------------------------------------------
@_settings("remote_config")
@given(st.data())
def test_remote_config_messages(data):
    kind = data.draw(st.sampled_from(["mutated", "fields", "bytes", "nested"]))
    if kind == "mutated":
        payload = _mutate(json.dumps(CONFIG_MSG).encode(), data.draw)
    elif kind == "fields":
        doc = json.loads(json.dumps(CONFIG_MSG))
        section = data.draw(st.sampled_from(["version", "config", "model", "rules", "cameras", "budget", "x"]))
        value = data.draw(_values.filter(lambda v: not isinstance(v, bytes)))
        if section in ("rules", "cameras", "budget"):
            doc["config"][section] = value
        else:
            doc[section] = value
        try:
            payload = json.dumps(doc).encode()
        except (TypeError, ValueError):
            return
    elif kind == "bytes":
        payload = data.draw(st.binary(max_size=1024))
    else:
        payload = ('{"version": "v1", "config": {"rules": ' + "[" * data.draw(st.integers(1, 5000))).encode()
    try:
        update = parse_update(payload, BASE_CONFIG)
    except RemoteRefused as exc:
        assert exc.reason
        return
    assert isinstance(update.config, EdgeConfig) and update.config.device == BASE_CONFIG.device


# -- a model server's answer -----------------------------------------------------------------------------------
@_settings("model_answer")
@given(st.data())
def test_model_answers(data):
    good = '{"verdict": "benign", "confidence": 0.8, "description": "a person standing"}'
    kind = data.draw(st.sampled_from(["mutated", "text", "nested", "wrapped"]))
    if kind == "mutated":
        text = _mutate(good.encode(), data.draw).decode("utf-8", "replace")
    elif kind == "text":
        text = data.draw(st.text(max_size=400))
    elif kind == "nested":
        text = '{"verdict": ' + "[" * data.draw(st.integers(1, 5000))
    else:
        text = data.draw(st.text(max_size=40)) + "```json\n" + good + "\n```" + data.draw(st.text(max_size=40))
    try:
        answer = parse_answer(text)
    except AnswerError as exc:
        assert str(exc)
        return
    assert answer.verdict in ("alert", "benign", "unknown") and 0.0 <= answer.confidence <= 1.0


def test_the_fuzz_budget_is_at_least_ten_thousand_messages():
    assert FUZZ_TOTAL >= 10_000
