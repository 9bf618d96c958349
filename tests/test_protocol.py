"""Protocol v1 on the wire: what round-trips, what is refused and why, and that no input whatsoever makes a
decoder raise anything but ProtocolError (a receiver counts and logs those and carries on)."""

from __future__ import annotations

import json

import cv2
import msgpack
import numpy as np
import pytest
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import (
    MAX_EVENT_BYTES,
    MAX_VERDICT_BYTES,
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
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def jpeg(visitor_crop) -> tuple[bytes, tuple[int, int]]:
    """A real crop: the first visitor in the sample clip, as the device would send it."""
    crop = visitor_crop
    ok, data = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, 85])
    assert ok
    return data.tobytes(), (crop.shape[1], crop.shape[0])


def _event(jpeg: tuple[bytes, tuple[int, int]], **changes) -> Event:
    data, size = jpeg
    fields = dict(event_id=uuid7(), device="pi-lab-1", camera="hall", site="lab", captured_ms=1_760_000_000_000,
                  label="person", score=0.62, uncertain=True, track_id=7,
                  detections=[Detection(label="person", score=0.62, box=(0.48, 0.0, 0.73, 0.93))],
                  phash="0f0f33cc0f0f33cc", reason="detector unsure", crop=data, crop_size=size)
    fields.update(changes)
    return Event(**fields)


def _raw(jpeg, **changes) -> dict:
    """The event as the map a sender packs, with some fields replaced (None removes one)."""
    obj = _event(jpeg).model_dump(by_alias=True)
    for key, value in changes.items():
        if value is None:
            obj.pop(key)
        else:
            obj[key] = value
    return obj


def _pack(obj) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def _verdict(**changes) -> Verdict:
    fields = dict(event_id=uuid7(), device="pi-lab-1", camera="hall", label="person", verdict="alert",
                  confidence=0.83, description="a person standing by the table, back to the camera",
                  model="smollm2-135m", source="llm", created_ms=1_760_000_000_500,
                  timings=Timings(queue_ms=1.5, analyze_ms=1234.25, total_ms=1240.0),
                  cache=ReuseRule(scope="camera", device="pi-lab-1", camera="hall", site="lab", label="person",
                                  phash="0f0f33cc0f0f33cc", max_distance=10, prompt_version="p1", ttl_s=3600))
    fields.update(changes)
    return Verdict(**fields)


# -- round trips -----------------------------------------------------------------------------------------
def test_event_round_trip_keeps_every_field_and_the_crop_bytes(jpeg):
    event = _event(jpeg)
    data = encode_event(event)
    assert len(data) < MAX_EVENT_BYTES
    back = decode_event(data)
    assert back == event
    assert back.crop == jpeg[0] and back.crop_size == jpeg[1]
    assert cv2.imdecode(np.frombuffer(back.crop, np.uint8), cv2.IMREAD_COLOR).shape[:2] == (400, 190)


def test_verdict_round_trip_is_json_any_subscriber_can_read():
    verdict = _verdict()
    data = encode_verdict(verdict)
    as_json = json.loads(data)
    assert as_json["v"] == 1 and as_json["verdict"] == "alert" and as_json["cache"]["phash"] == "0f0f33cc0f0f33cc"
    assert decode_verdict(data) == verdict
    reused = _verdict(source="cloud_cache", reused_from=uuid7(), cache=None)
    assert decode_verdict(encode_verdict(reused)) == reused


def test_unknown_fields_from_a_newer_sender_are_ignored(jpeg):
    event = decode_event(_pack(_raw(jpeg, future_field={"x": 1})))
    assert event.label == "person"
    verdict = decode_verdict(json.dumps({**json.loads(encode_verdict(_verdict())), "novel": True}).encode())
    assert verdict.verdict == "alert"


# -- refusals, each with a reason a person can act on ----------------------------------------------------
@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"\xc1\x00\x01", "not valid MessagePack"),
        (b"", "not valid MessagePack"),
        (msgpack.packb([1, 2, 3]), "must be a MessagePack map"),
        (b"\x00" * (MAX_EVENT_BYTES + 1), "over the"),
    ],
)
def test_malformed_and_oversized_events_are_refused(payload, reason):
    with pytest.raises(ProtocolError, match=reason) as err:
        decode_event(payload)
    assert err.value.reason == str(err.value)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"v": 2}, "version 2 is not supported"),
        ({"v": None}, "version None is not supported"),
        ({"phash": None}, "phash"),
        ({"event_id": None}, "event_id"),
        ({"crop": b"\x89PNG\r\n\x1a\n" + b"\x00" * 64}, "crop must be JPEG"),
        ({"crop": "not bytes at all"}, "crop"),
        ({"device": "Pi_Lab!"}, "device"),
        ({"device": "a" * 65}, "device"),
        ({"event_id": "not-a-uuid"}, "event_id"),
        ({"score": 1.5}, "score"),
        ({"phash": "XYZ"}, "phash"),
        ({"detections": [{"label": "person", "score": 0.5, "box": [0, 0, 2, 1]}] }, "detections"),
        ({"crop_size": [5000, 5000]}, "pixel limit"),
    ],
)
def test_invalid_events_are_refused_with_the_field_named(jpeg, changes, reason):
    with pytest.raises(ProtocolError, match=reason):
        decode_event(_pack(_raw(jpeg, **changes)))


def test_an_event_too_big_to_send_is_refused_at_the_sender(jpeg):
    big = _event(jpeg, crop=b"\xff\xd8\xff" + bytes(MAX_EVENT_BYTES))
    with pytest.raises(ProtocolError, match="send a smaller crop"):
        encode_event(big)


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"v": 2}', "version 2 is not supported"),
        (b" " * (MAX_VERDICT_BYTES + 1), "over the"),
    ],
)
def test_malformed_verdicts_are_refused(payload, reason):
    with pytest.raises(ProtocolError, match=reason):
        decode_verdict(payload)


@pytest.mark.parametrize(("key", "value"), [("verdict", "maybe"), ("confidence", 2), ("source", "oracle"),
                                             ("device", "UPPER"), ("created_ms", -1)])
def test_invalid_verdicts_are_refused_with_the_field_named(key, value):
    obj = json.loads(encode_verdict(_verdict()))
    obj[key] = value
    with pytest.raises(ProtocolError, match=key):
        decode_verdict(json.dumps(obj).encode())


# -- nothing but ProtocolError, whatever arrives --------------------------------------------------------
def _decodes_or_refuses(decoder, data: bytes) -> None:
    try:
        decoder(data)
    except ProtocolError as exc:
        assert exc.reason  # always says why
    # anything else propagates and fails the test


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2048))
def test_random_bytes_never_raise_anything_but_protocol_error(data):
    _decodes_or_refuses(decode_event, data)
    _decodes_or_refuses(decode_verdict, data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_valid_events_never_raise_anything_but_protocol_error(jpeg, data):
    payload = bytearray(encode_event(_event(jpeg)))
    for _ in range(data.draw(st.integers(1, 8), label="mutations")):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        at = data.draw(st.integers(0, len(payload) - 1))
        if kind == "flip":
            payload[at] ^= data.draw(st.integers(1, 255))
        elif kind == "cut":
            del payload[at:at + data.draw(st.integers(1, 64))]
        else:
            payload[at:at] = data.draw(st.binary(min_size=1, max_size=16))
        if not payload:
            break
    _decodes_or_refuses(decode_event, bytes(payload))


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1) | st.floats(allow_nan=True)
    | st.text(max_size=40) | st.binary(max_size=40),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_events_with_fields_of_any_type_never_raise_anything_but_protocol_error(jpeg, data):
    obj = _raw(jpeg)
    for key in data.draw(st.lists(st.sampled_from(sorted(obj)), min_size=1, max_size=4, unique=True)):
        obj[key] = data.draw(_values, label=key)
    _decodes_or_refuses(decode_event, _pack(obj))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_verdicts_with_fields_of_any_type_never_raise_anything_but_protocol_error(data):
    obj = json.loads(encode_verdict(_verdict()))
    for key in data.draw(st.lists(st.sampled_from(sorted(obj)), min_size=1, max_size=4, unique=True)):
        value = data.draw(_values.filter(lambda v: not isinstance(v, bytes)), label=key)
        obj[key] = value
    try:
        raw = json.dumps(obj).encode()
    except (TypeError, ValueError):
        return  # not expressible as JSON (bytes deep inside); nothing a sender could send
    _decodes_or_refuses(decode_verdict, raw)
