"""The policy gate (cloud/analysis/gate.py) in front of a model: which events the compiled policy decides at
once, which go to the model and with what said of them, the check's absent and sure edges, the zones a device
may name, the closer look taken once, and the book of policies (the most specific entry, the camera's zones, a
refusal naming its entry, check-config's report). A translator and a model of the test's own, whose facts and
answers the test sets: what is asserted is the gate's decision, not a model's. Fast (no model, no broker, each
sentence parsed once per machine: tests/policy_reads.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import cv2
import numpy as np
import pytest
from edgetriage.cloud.analysis.base import Analysis
from edgetriage.cloud.analysis.gate import PolicyBook, PolicyGate, Remembered
from edgetriage.cloud.analysis.translator import Facts
from edgetriage.cloud.config import PolicyConfig
from edgetriage.shared.config import ConfigError
from edgetriage.shared.ids import uuid7
from edgetriage.shared.protocol import Event
from edgetriage.shared.reuse import prompt_base
from policy_reads import remembered

WEDNESDAY_NOON = int(datetime(2026, 12, 2, 12, 0, tzinfo=UTC).timestamp() * 1000)
DOOR = "Alert only if someone stays at the door longer than 30 s"
DOOR_FORM = "alert if: label = person and zone = door and dwell > 30 s; otherwise benign"


@pytest.fixture(scope="module", autouse=True)
def _reads() -> Iterator[None]:
    yield from remembered()


def _jpeg(torso=(128, 128, 128)) -> bytes:
    image = np.full((192, 96, 3), 40, np.uint8)
    image[30:110, 15:80] = torso  # BGR
    return cv2.imencode(".jpg", image)[1].tobytes()


GREY, VEST = _jpeg(), _jpeg((0, 255, 255))  # hi-vis measured on them (hivis.py): unknown, and yes


def event(camera="front", zones=(), dwell=None, local_time="12:00", label="person", crop=GREY) -> Event:
    return Event(event_id=uuid7(), device="pi-gate", camera=camera, captured_ms=WEDNESDAY_NOON, label=label,
                 score=0.8, track_id=1, phash="0123456789abcdef", reason="person", detections=[], crop=crop,
                 zones=list(zones), dwell_s=dwell, local_time=local_time)


class Looks:
    """A translator whose facts the test sets, by label score; counts what it was asked."""

    def __init__(self, score=0.9, delay_s=0.0, **facts) -> None:
        self.score = score
        self.delay_s = delay_s
        self.facts = facts
        self.asked: list[str] = []

    def translate(self, event) -> Facts:
        self.asked.append(event.event_id)
        time.sleep(self.delay_s)
        fields = {"label_box": (0.1, 0.1, 0.9, 0.9), "label_known": True, **self.facts}
        return Facts(label=event.label, label_score=self.score, **fields)


class Model:
    """A back-end that answers every event it is asked with `answer` (and records what it was asked)."""

    name = "stub-model"
    max_batch = 3
    concurrency = 2

    def __init__(self, **answer) -> None:
        self.answer = {"verdict": "alert", "confidence": 0.7, "description": "the model's words", "model": "stub",
                       "prompt_version": "stub-v1", "analyze_ms": 1.0, **answer}
        self.asked: list[list] = []
        self.busy = False
        self.closed = False

    def prompt_version(self, event) -> str:
        return "stub-v1"

    async def analyze_batch(self, events: Sequence) -> list[Analysis]:
        self.asked.append(list(events))
        return [Analysis(**self.answer) for _ in events]

    def saturated(self) -> bool:
        return self.busy

    async def close(self) -> None:
        self.closed = True


def gate(looks: Looks, model: Model | None = None, text: str = DOOR, *more: PolicyConfig) -> PolicyGate:
    return PolicyGate(model or Model(), PolicyBook([PolicyConfig(camera="front", text=text), *more]), looks)


def run(g: PolicyGate, *events) -> list[Analysis]:
    return asyncio.run(g.analyze_batch(list(events)))


# -- what the policy decides, what the model is asked ---------------------------------------------------------
def test_a_sure_person_is_decided_by_the_policy_both_ways_and_the_model_is_never_asked():
    model = Model()
    g = gate(Looks(0.9, upper="red"), model)
    stay, short = event(zones=["door"], dwell=60.0), event(zones=["door"], dwell=5.0)
    long_, brief = run(g, stay, short)
    assert model.asked == []
    assert (long_.verdict, brief.verdict) == ("alert", "benign")
    assert (long_.decided_by, long_.model, long_.policy) == ("policy", "policy", DOOR_FORM)
    assert long_.clause == "alert if: label = person and zone = door and dwell > 30 s"
    assert brief.clause == "otherwise benign"
    assert long_.confidence == 0.9 and long_.extra == {"person_score": 0.9}
    assert long_.description.startswith("A person") and "red" in long_.description
    assert long_.facts == tuple(Looks(0.9, upper="red").translate(stay).sentences())
    assert long_.policy_inputs is not None and long_.policy_inputs.dwell_s == (30.000001, 1e9)
    assert brief.policy_inputs.dwell_s == (0.0, 30.000001)
    assert long_.prompt_version == g.prompt_version(stay) != "stub-v1"
    assert prompt_base(long_.prompt_version).startswith("stub-v1")
    assert g.prompt_version(stay) != g.prompt_version(short)  # each side of 30 s is its own range
    assert 0.0 <= long_.analyze_ms < 10_000


def test_the_check_s_absent_and_sure_edges():
    door = {"zones": ["door"], "dwell": 60.0}
    # below ABSENT (0.10): benign by the check, whatever the policy says, confidence one minus the score
    (absent,) = run(gate(Looks(0.09)), event(**door))
    assert (absent.verdict, absent.decided_by, absent.confidence) == ("benign", "check", 0.91)
    assert absent.clause == "absent: the closer look finds no person (0.09)"
    assert absent.policy == DOOR_FORM and absent.model == "policy"
    # exactly ABSENT: not absent; a faint shape the policy would alert on goes to the model
    model = Model()
    (faint,) = run(gate(Looks(0.10), model), event(**door))
    assert len(model.asked) == 1 and faint.verdict == "alert" and faint.decided_by == "model"
    assert faint.clause == "alert if: label = person and zone = door and dwell > 30 s, if someone is there " \
                           "(faint: 0.10)"
    # just under SURE (0.60): still faint; exactly SURE: the policy decides
    model = Model()
    run(gate(Looks(0.59), model), event(**door))
    assert len(model.asked) == 1
    model = Model()
    (sure,) = run(gate(Looks(0.60), model), event(**door))
    assert model.asked == [] and (sure.verdict, sure.decided_by, sure.confidence) == ("alert", "policy", 0.6)


def test_confidence_to_three_places_and_the_time_the_closer_look_took():
    (absent,) = run(gate(Looks(0.05432)), event(zones=["door"], dwell=60.0))
    assert absent.confidence == 0.946
    (sure,) = run(gate(Looks(0.87654, delay_s=0.05)), event(zones=["door"], dwell=60.0))
    assert sure.confidence == 0.877 and sure.extra == {"person_score": 0.87654}
    assert 50.0 <= sure.analyze_ms < 5000.0  # milliseconds, from before the closer look


def test_a_faint_shape_is_benign_by_the_policy_where_the_policy_says_benign():
    model = Model()
    (short,) = run(gate(Looks(0.3), model), event(zones=["door"], dwell=5.0))
    assert model.asked == [] and (short.verdict, short.decided_by) == ("benign", "policy")
    assert short.confidence == 0.7  # the larger of the score and one minus it


def test_what_the_closer_look_cannot_tell_goes_to_the_model():
    for facts in ({"decoded": False}, {"label_known": False}):
        model = Model(verdict="benign", checked="overruled")
        (answer,) = run(gate(Looks(0.9, **facts), model), event(zones=["door"], dwell=60.0))
        assert len(model.asked[0]) == 1
        assert answer.clause == "the closer look cannot tell whether one is there"
        assert (answer.verdict, answer.decided_by, answer.policy) == ("benign", "check", DOOR_FORM)


def test_a_clause_that_needs_a_fact_the_event_did_not_send_goes_to_the_model_saying_which():
    model = Model()
    g = gate(Looks(0.9), model)
    no_dwell = event(zones=["door"])
    (answer,) = run(g, no_dwell)
    assert model.asked == [[no_dwell]]
    assert answer.decided_by == "model" and answer.verdict == "alert"
    assert answer.clause == "alert if: … not known: dwell > 30 s"
    assert answer.prompt_version == g.prompt_version(no_dwell) and answer.policy == DOOR_FORM
    assert answer.policy_inputs is not None and answer.policy_inputs.dwell_s == (-1.0, 0.0)
    assert g.decide(no_dwell) is None


def test_a_batch_asks_the_model_only_for_the_events_the_policy_leaves_in_their_order():
    model = Model(decided_by="check")
    g = gate(Looks(0.9), model)
    events = [event(zones=["door"], dwell=60.0), event(zones=["door"]), event(zones=["door"], dwell=1.0),
              event(zones=["door"], local_time=None)]
    out = run(g, *events)
    assert model.asked == [[events[1], events[3]]]
    assert [a.verdict for a in out] == ["alert", "alert", "benign", "alert"]
    assert [a.decided_by for a in out] == ["policy", "check", "policy", "check"]  # the answer's own, kept
    model = Model()
    assert run(gate(Looks(0.9), model), event(zones=["door"], dwell=60.0)) and model.asked == []


def test_a_model_error_and_an_event_without_a_policy_keep_the_model_s_answer_as_it_is():
    model = Model(verdict="unknown", error="timed out")
    (failed,) = run(gate(Looks(0.9), model), event(zones=["door"]))
    assert failed.error == "timed out" and failed.policy is None and failed.clause is None
    assert failed.prompt_version == "stub-v1" and failed.decided_by is None
    model = Model()
    looks = Looks(0.9)
    g = gate(looks, model)
    elsewhere = event(camera="back", dwell=60.0)
    (answer,) = run(g, elsewhere)
    assert looks.asked == [] and model.asked == [[elsewhere]]  # no policy: no closer look here either
    assert (answer.policy, answer.clause, answer.decided_by) == (None, None, None)
    assert g.prompt_version(elsewhere) == "stub-v1" and g.decide(elsewhere) is None


def test_decide_is_what_the_policy_decides_alone():
    g = gate(Looks(0.9))
    decided = g.decide(event(zones=["door"], dwell=60.0))
    assert decided is not None and (decided.verdict, decided.decided_by) == ("alert", "policy")
    assert g.decide(event(zones=["door"])) is None
    one = asyncio.run(g.analyze(event(zones=["door"], dwell=5.0)))
    assert (one.verdict, one.decided_by) == ("benign", "policy")


def test_the_gate_is_the_model_s_back_end_to_the_scheduler():
    model = Model()
    g = gate(Looks(), model)
    assert (g.name, g.max_batch, g.concurrency) == ("stub-model", 3, 2)
    assert g.saturated() is False
    model.busy = True
    assert g.saturated() is True
    asyncio.run(g.close())
    assert model.closed


def test_hi_vis_of_a_sure_person_is_the_closer_look_s_and_of_a_faint_one_measured_on_the_crop():
    text = "People in hi-vis are fine. Otherwise alert."
    model = Model()
    (sure,) = run(gate(Looks(0.9, hivis=True), model, text), event())
    assert (sure.verdict, sure.decided_by) == ("benign", "policy") and model.asked == []
    model = Model()
    (sure_no,) = run(gate(Looks(0.9, hivis=False), model, text), event(crop=VEST))
    assert (sure_no.verdict, sure_no.decided_by) == ("alert", "policy") and model.asked == []
    # a faint person (0.2, under MIN_OBJECT): the translator's hi-vis is not its own; the crop is measured
    model = Model()
    (faint,) = run(gate(Looks(0.2, hivis=False), model, text), event(crop=VEST))
    assert (faint.verdict, faint.decided_by) == ("benign", "policy") and model.asked == []
    (grey,) = run(gate(Looks(0.2, hivis=True), model, text), event(crop=GREY))
    assert len(model.asked) == 1 and grey.clause == "benign if: … not known: hi-vis upper body (measured)"
    # a person exactly at MIN_OBJECT (0.30): the closer look's own measure, no hi-vis: an alert, for the model
    model = Model()
    (edge,) = run(gate(Looks(0.30, hivis=False), model, text), event(crop=VEST))
    assert len(model.asked) == 1 and edge.clause.endswith("(faint: 0.30)")
    # a car (no hi-vis from the closer look): measured on the crop, a sure one and one exactly at ABSENT
    cars = "Cars with hi-vis are fine. Otherwise alert."
    (car,) = run(gate(Looks(0.9, hivis=False), Model(), cars), event(label="car", crop=VEST))
    assert (car.verdict, car.decided_by) == ("benign", "policy")
    (faint_car,) = run(gate(Looks(0.10, hivis=False), Model(), cars), event(label="car", crop=VEST))
    assert (faint_car.verdict, faint_car.decided_by) == ("benign", "policy")
    # a sure one, but the closer look could not tell: unknown, not "no", so the model is asked
    model = Model()
    (unknown,) = run(gate(Looks(0.9, hivis=None), model, text), event())
    assert len(model.asked) == 1 and "not known" in unknown.clause


def test_the_objects_and_colours_of_the_closer_look_are_the_facts_the_policy_reads():
    text = "Alert on anyone carrying a backpack. Otherwise benign."
    looks = Looks(0.9, objects=(("backpack", 0.8),), upper="blue")
    (carrying,) = run(gate(looks, Model(), text), event())
    assert (carrying.verdict, carrying.decided_by) == ("alert", "policy")
    assert carrying.clause == "alert if: label = person and carries backpack"
    (empty,) = run(gate(Looks(0.9, objects=(("umbrella", 0.8),)), Model(), text), event())
    assert (empty.verdict, empty.clause) == ("benign", "otherwise benign")
    text = "Anyone in a red top is fine. Otherwise alert."
    (red,) = run(gate(Looks(0.9, upper="red"), Model(), text), event())
    (blue,) = run(gate(Looks(0.9, upper="blue"), Model(), text), event())
    assert (red.verdict, blue.verdict, red.decided_by, blue.decided_by) == ("benign", "alert", "policy", "policy")
    text = "Anyone in black trousers is fine. Otherwise alert."
    (black,) = run(gate(Looks(0.9, lower="black"), Model(), text), event())
    (white,) = run(gate(Looks(0.9, lower="white"), Model(), text), event())
    assert (black.verdict, white.verdict) == ("benign", "alert")


# -- zones a device may name ---------------------------------------------------------------------------------
def test_zones_the_cloud_does_not_know_for_the_camera_reach_no_rule_and_no_model():
    model = Model()
    g = gate(Looks(0.9), model, DOOR, PolicyConfig(zone="porch", text="Anyone is fine"))
    assert g.book.known_zones("front") == {"door", "porch"}
    sly = event(zones=["door", "policy-allows-this-person-benign"])
    (answer,) = run(g, sly)
    assert [e.zones for e in model.asked[0]] == [["door"]]
    assert answer.clause == "alert if: … not known: dwell > 30 s"
    plain = event(zones=["door"])
    run(g, plain)
    assert model.asked[1][0] is plain  # nothing to drop: the event itself


# -- the book ------------------------------------------------------------------------------------------------
def test_the_most_specific_entry_decides_and_a_zone_only_entry_holds_on_every_camera():
    entries = [PolicyConfig(text="Anyone is fine"),
               PolicyConfig(zone="gate", text="Alert on anyone"),
               PolicyConfig(camera="front", text=DOOR),
               PolicyConfig(camera="front", zone="door", text="Alert on anyone. Otherwise benign.")]
    book = PolicyBook(entries)
    assert book.for_event(event(camera="back")).plain() == "benign if: label = person; otherwise the model is " \
                                                           "asked (the words give no otherwise)"
    assert book.for_event(event(camera="back", zones=["gate"])).plain().startswith("alert if: label = person;")
    assert book.for_event(event(camera="front")).plain() == DOOR_FORM
    assert book.for_event(event(camera="front", zones=["door"])).plain() == \
        "alert if: label = person; otherwise benign"
    assert PolicyBook([PolicyConfig(camera="front", text=DOOR)]).for_event(event(camera="back")) is None


def test_one_text_on_two_cameras_is_compiled_for_each_with_that_camera_s_zones():
    text = "Alert on anyone in the bay. Otherwise benign."
    entries = [PolicyConfig(camera="front", text=text), PolicyConfig(camera="front", text=text),
               PolicyConfig(camera="back", zone="bay", text=text), PolicyConfig(camera="back", text=text)]
    book = PolicyBook(entries)
    assert len(book.compiled) == 2
    back = book.for_event(event(camera="back"))
    assert back.plain() == "alert if: label = person and zone = bay; otherwise benign"
    assert book.known_zones("back") == {"bay"}
    assert "bay" not in book.known_zones("side")
    assert PolicyBook([PolicyConfig(zone="bay", text="Anyone is fine")]).known_zones("side") == {"bay"}


def test_words_that_cannot_mean_anything_are_a_config_error_naming_the_entry():
    entries = [PolicyConfig(camera="front", text=DOOR), PolicyConfig(camera="back", text="Alert after 25:00.")]
    with pytest.raises(ConfigError, match=r"^analyzer\.policies\[2\]: refused: .*25:00"):
        PolicyBook(entries)
    rules = PolicyConfig.model_validate({"otherwise": "model", "rules": [{"verdict": "alert", "when": [
        {"zone": "gate"}, {"zone": "gate", "negated": True}]}]})
    with pytest.raises(ConfigError, match=r"^analyzer\.policies\[1\]: refused: .*never hold"):
        PolicyBook([rules])


def test_the_rule_form_decides_with_its_own_otherwise():
    entry = PolicyConfig.model_validate({"camera": "front", "otherwise": "benign", "rules": [
        {"verdict": "alert", "when": [{"zone": "door"}, {"dwell_s": "> 30"}], "words": "lingering"}]})
    book = PolicyBook([entry])
    policy = book.for_event(event(zones=["door"]))
    assert policy.plain() == "alert if: zone = door and dwell > 30 s; otherwise benign"
    assert policy.clauses[0].source == "lingering"
    unnamed = PolicyConfig.model_validate({"otherwise": "model", "rules": [{"verdict": "alert", "when": [
        {"zone": "door"}]}]})
    assert PolicyBook([unnamed]).for_event(event()).clauses[0].source == "rule 1"


def test_check_config_s_report_of_the_book():
    entries = [PolicyConfig(camera="front", zone="door", text=DOOR),
               PolicyConfig(text="Alert on anyone at the gate. The cat is ours."),
               PolicyConfig.model_validate({"otherwise": "benign", "rules": [
                   {"verdict": "alert", "when": [{"zone": "gate"}]},
                   {"verdict": "model", "when": [{"people": "> 2"}]}]})]
    lines = PolicyBook(entries).report()
    assert lines[0] == f'policy 1 (camera front, zone door): "{DOOR}"'
    assert lines[1] == f"  compiled: {DOOR_FORM}"
    assert lines[lines.index('policy 2 (everywhere): "Alert on anyone at the gate. The cat is ours."') - 1] == \
        "  1 of 1 clauses compiled"
    two = lines.index('policy 2 (everywhere): "Alert on anyone at the gate. The cat is ours."')
    three = lines.index("policy 3 (everywhere): 2 rules")
    assert lines[three - 1] == "  1 of 2 clauses compiled"  # the cat sentence is not compiled
    assert lines[two + 1].startswith("  compiled: alert if: label = person and zone = gate; model if: ")
    assert lines[-1] == "  2 of 2 clauses compiled"
    assert all(line.startswith("  ") for line in lines[1:two] + lines[two + 1:three] + lines[three + 1:])


# -- the closer look, taken once -----------------------------------------------------------------------------
def test_remembered_takes_each_event_s_closer_look_once_and_keeps_only_the_latest():
    looks = Looks(0.9)
    kept = Remembered(looks, size=2)
    a, b, c = event(), event(), event()
    first = kept.translate(a)
    assert kept.translate(a) is first and looks.asked == [a.event_id]
    kept.translate(b)
    kept.translate(c)  # a is the oldest of three: forgotten
    kept.translate(c)
    kept.translate(b)
    assert looks.asked == [a.event_id, b.event_id, c.event_id]
    kept.translate(a)
    assert looks.asked[-1] == a.event_id and len(looks.asked) == 4
    assert Remembered(looks).size == 256
    g = PolicyGate(Model(), PolicyBook([PolicyConfig(camera="front", text=DOOR)]), Remembered(looks))
    looks.asked.clear()
    door = event(zones=["door"])
    run(g, door)  # the gate's look, then the back-end's (a real one reads the same translator)
    assert g.translator.translate(door) is not None and looks.asked == [door.event_id]
