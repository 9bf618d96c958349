"""Issue 36: policies that mean what their words say. One test per example of the issue (each read wrongly
before), the words consumed or the sentence not compiled, refusals in one line, a flagged sentence that goes
to the model exactly where check-config says, the rule form in the config, and edge values of the evaluator
(a window's first and last minute, a wrapping window's end, at least against more than, weekday ranges, a
denied zone). No model, no broker: the compiler, the evaluator and the CLI as an operator runs them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from edgetriage.cli import main as cli_main
from edgetriage.cloud.analysis.gate import PolicyBook
from edgetriage.cloud.analysis.policy import Seen, evaluate
from edgetriage.cloud.analysis.policy_check import PolicyRefused
from edgetriage.cloud.analysis.policy_words import compile_policy
from edgetriage.cloud.config import PolicyConfig, load_cloud_config
from edgetriage.shared.config import ConfigError
from edgetriage.shared.policycell import EventFacts
from policy_reads import remembered


@pytest.fixture(scope="module", autouse=True)
def _reads() -> Iterator[None]:  # each sentence parsed once per machine (tests/policy_reads.py)
    yield from remembered()


DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def seen(time="12:00", day="Wed", zones=(), dwell=5.0, direction="", people=1, label="person", hivis=False,
         upper=None, carries=()) -> Seen:
    h, m = (int(x) for x in time.split(":"))
    return Seen(EventFacts(h * 60 + m, DAYS.index(day), frozenset(zones), dwell, direction, people), label, hivis,
                upper, None, frozenset(carries))


def verdict(text: str, known: tuple[str, ...] = (), camera: str | None = None, **facts) -> str:
    return evaluate(compile_policy(text, known, camera), seen(**facts)).verdict or "model"


# -- the examples, one test each ---------------------------------------------------------------------
def test_outside_opening_hours_is_outside_them_not_a_clause_that_never_holds():
    text = "Alert on anyone outside opening hours 07:00-19:00."
    assert [verdict(text, time=t) for t in ("06:59", "07:00", "18:59", "19:00", "02:00")] == \
        ["alert", "model", "model", "alert", "alert"]


def test_isn_t_wearing_hi_vis_is_read_with_its_negation():
    for text in ("Alert if anybody on the loading dock isn't wearing a hi-vis vest.",
                 "Alert if anybody on the loading dock is not wearing a hi-vis vest."):
        dock = ("loading dock",)
        assert verdict(text, dock, zones=dock, hivis=False) == "alert"
        assert verdict(text, dock, zones=dock, hivis=True) == "model"  # the words say nothing of them
        assert verdict(text, dock, zones=dock, hivis=None) == "model"  # an infrared frame: unknown, not "no"
        assert compile_policy(text, dock).uncompiled == ()


def test_anyone_else_there_is_the_exception_not_the_opposite_default():
    text = "Staff in high-visibility jackets may be in the yard. Anyone else there is an alert."
    policy = compile_policy(text, ("yard",))
    assert policy.uncompiled == () and policy.otherwise == "model"
    assert verdict(text, ("yard",), zones=("yard",), hivis=True) == "benign"
    assert verdict(text, ("yard",), zones=("yard",), hivis=False) == "alert"
    assert verdict(text, ("yard",), zones=(), hivis=False) == "model"  # elsewhere: the words say nothing


def test_not_not_is_never_compiled_as_one_not():
    policy = compile_policy("Alert only if not not at the door", ("door",))
    assert policy.uncompiled == ("Alert only if not not at the door",)
    assert evaluate(policy, seen(zones=())).verdict is None and evaluate(policy, seen(zones=("door",))).verdict is None


def test_friday_night_runs_into_saturday_morning():
    text = "Alert on anybody at the gate on Friday or Saturday night."
    gate = ("gate",)
    assert verdict(text, gate, zones=gate, day="Sun", time="02:00") == "alert"  # Saturday night
    assert verdict(text, gate, zones=gate, day="Sat", time="02:00") == "alert"  # Friday night
    assert verdict(text, gate, zones=gate, day="Fri", time="02:00") == "model"  # Thursday night
    assert verdict(text, gate, zones=gate, day="Fri", time="22:00") == "alert"
    assert verdict(text, gate, zones=gate, day="Sun", time="22:00") == "model"


def test_two_verdict_sentences_without_otherwise_leave_the_rest_to_the_model():
    text = "Ignore people leaving. Anyone coming in after 9pm is an alert."
    policy = compile_policy(text)
    assert policy.otherwise == "model"
    assert "otherwise the model is asked (the words give no otherwise)" in policy.plain()
    assert verdict(text, direction="towards the camera", time="14:00") == "model"
    assert verdict(text, direction="towards the camera", time="21:00") == "alert"
    assert verdict(text, direction="towards the camera", time="05:59") == "alert"
    assert verdict(text, direction="away from the camera", time="23:00") == "benign"


def test_a_sentence_not_compiled_is_asked_of_the_model_where_it_stands():
    text = "Ignore people with a clipboard. Alert on anyone at the door."
    policy = compile_policy(text, ("door",))
    assert policy.uncompiled == ("Ignore people with a clipboard",)
    assert evaluate(policy, seen(zones=("door",))).verdict is None  # the flagged sentence comes first: the model
    after = compile_policy("Alert on anyone at the door. Ignore people with a clipboard.", ("door",))
    assert evaluate(after, seen(zones=("door",))).verdict == "alert"  # a rule before it decides
    assert evaluate(after, seen(zones=())).verdict is None  # it is reached: the model, as check-config says


def test_an_impossible_time_is_refused_and_check_config_exits_2(tmp_path, capsys):
    with pytest.raises(PolicyRefused, match="impossible time “25:00”"):
        compile_policy("Alert after 25:00")
    with pytest.raises(PolicyRefused, match="13 am"):
        compile_policy("Alert on anyone at the door after 13am")
    config = tmp_path / "cloud.toml"
    config.write_text('[[analyzer.policies]]\ntext = "Alert after 25:00"\n', encoding="utf-8")
    assert cli_main(["cloud", "check-config", "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["edgetriage: error: analyzer.policies[1]: refused: impossible time “25:00”"]


def test_contradictions_and_clauses_that_never_hold_are_refused():
    with pytest.raises(PolicyRefused, match="both apply"):
        compile_policy("Alert on anyone at the gate. Ignore people in hi-vis.", ("gate",))
    with pytest.raises(PolicyRefused, match="never hold"):
        compile_policy("Alert on anyone in the mornings between 2pm and 3pm")
    with pytest.raises(PolicyRefused, match="never hold"):
        compile_policy("Alert if someone stays longer than a minute and less than 10 seconds")
    # the words order them: not a contradiction
    assert compile_policy("Alert on anyone at the gate except people in hi-vis.", ("gate",)).uncompiled == ()


@pytest.mark.parametrize("text", [
    "Alert on anyone at the gate except people in hi-vis.",
    "Alert on anyone at the gate unless they are wearing hi-vis.",
    "Alert on anyone at the gate, but not people in hi-vis.",
])
def test_an_exception_takes_the_other_verdict_first(text):
    gate = ("gate",)
    assert [verdict(text, gate, zones=gate, hivis=h) for h in (True, False, None)] == ["benign", "alert", "model"]
    assert verdict(text, gate, zones=(), hivis=True) == "model"


@pytest.mark.parametrize("text", [
    "Alert on anyone without a badge",  # no rule reads "badge"
    "Staff are fine",  # who is staff: only the picture could tell
    "Alert if someone is loitering at the door",  # for how long?
    "Alert on anyone at the door between 8 and 10",  # morning or evening?
])
def test_words_no_rule_reads_leave_the_sentence_not_compiled(text):
    policy = compile_policy(text, ("door",))
    assert policy.uncompiled == (text,) and policy.clauses[0].verdict == "model"


# -- edge values of the evaluator ----------------------------------------------------------------------------
def test_a_window_includes_its_first_minute_and_excludes_its_end():
    text = "Alert on anyone at the door between 07:00 and 19:00. Anything else is fine."
    door = ("door",)
    assert [verdict(text, door, zones=door, time=t) for t in ("06:59", "07:00", "18:59", "19:00")] == \
        ["benign", "alert", "alert", "benign"]


def test_a_window_that_wraps_midnight_ends_at_its_end():
    text = "Alert on anyone at the door after 10pm. Otherwise benign."
    door = ("door",)
    assert [verdict(text, door, zones=door, time=t) for t in ("21:59", "22:00", "23:59", "00:00", "05:59", "06:00")] \
        == ["benign", "alert", "alert", "alert", "alert", "benign"]
    assert [verdict("Alert on anyone before 7am. Otherwise benign.", time=t) for t in ("00:00", "06:59", "07:00")] \
        == ["alert", "alert", "benign"]


def test_at_least_against_more_than():
    more = "Alert if someone stays at the door longer than 30 seconds. Anything else is fine."
    least = "Alert if someone stays at the door for at least 30 seconds. Anything else is fine."
    door = ("door",)
    assert [verdict(more, door, zones=door, dwell=d) for d in (29.9, 30.0, 30.1)] == ["benign", "benign", "alert"]
    assert [verdict(least, door, zones=door, dwell=d) for d in (29.9, 30.0, 30.1)] == ["benign", "alert", "alert"]
    crowd = "Alert on more than two people. Otherwise benign."
    assert [verdict(crowd, people=n) for n in (2, 3)] == ["benign", "alert"]
    group = "Alert on three or more people. Otherwise benign."
    assert [verdict(group, people=n) for n in (2, 3)] == ["benign", "alert"]


def test_weekday_ranges_and_the_weekend():
    text = "Alert on anyone from Monday to Friday. Otherwise benign."
    assert [verdict(text, day=d) for d in DAYS] == ["alert"] * 5 + ["benign"] * 2
    wraps = "Alert on anyone Friday to Monday. Otherwise benign."
    assert [verdict(wraps, day=d) for d in DAYS] == ["alert", "benign", "benign", "benign", "alert", "alert", "alert"]
    weekend = "Ignore anyone at the weekend. Otherwise alert."
    assert [verdict(weekend, day=d) for d in ("Fri", "Sat", "Sun")] == ["alert", "benign", "benign"]


def test_a_denied_zone_holds_everywhere_but_there():
    text = "Alert if someone is in the garden and not on the path. Otherwise benign."
    zones = ("garden", "path")
    assert verdict(text, zones, zones=("garden",)) == "alert"
    assert verdict(text, zones, zones=("garden", "path")) == "benign"
    assert verdict(text, zones, zones=()) == "benign"
    assert verdict("Alert on anyone outside the yard. Otherwise benign.", ("yard",), zones=("yard",)) == "benign"


def test_a_car_is_not_anyone():
    text = "Alert on anyone at the gate. Cars are fine."
    gate = ("gate",)
    assert (verdict(text, gate, zones=gate), verdict(text, gate, zones=gate, label="car"),
            verdict(text, gate, zones=gate, label="dog")) == ("alert", "benign", "model")


# -- the rule form in the config -----------------------------------------------------------------------------
def _config(tmp_path, body: str) -> str:
    path = tmp_path / "cloud.toml"
    path.write_text(body, encoding="utf-8")
    return str(path)


def test_the_rule_form_in_the_config_decides(tmp_path):
    config = load_cloud_config(_config(tmp_path, '''
[[analyzer.policies]]
camera = "gate"
otherwise = "benign"
[[analyzer.policies.rules]]
verdict = "alert"
when = [{ label = ["person"] }, { time = "22:00-06:00", starts_on = ["Fri"] }, { zone = "gate", negated = true }]
'''))
    book = PolicyBook(config.analyzer.policies)
    policy = next(iter(book.compiled.values()))
    assert policy.plain() == ("alert if: label = person and local time 22:00–06:00 starting on Fri and zone ≠ gate; "
                              "otherwise benign")
    assert evaluate(policy, seen(day="Sat", time="05:59")).verdict == "alert"
    assert evaluate(policy, seen(day="Sat", time="06:00")).verdict == "benign"
    assert evaluate(policy, seen(day="Sat", time="05:59", zones=("gate",))).verdict == "benign"


@pytest.mark.parametrize("when, wrong", [
    ('{ time = "25:00-06:00" }', "time"),
    ('{ dwell_s = "about 30" }', "dwell_s"),
    ('{ colour = "red" }', "colour"),
    ('{ zone = "gate", label = ["car"] }', "exactly one"),
    ('{ starts_on = ["Fri"], days = ["Fri"] }', "starts_on goes with time"),
    ('{ time = "07:00-07:00" }', "starts where it ends"),
])
def test_the_rule_form_refuses_unknown_keys_and_impossible_values(tmp_path, when, wrong):
    path = _config(tmp_path, f'[[analyzer.policies]]\notherwise = "model"\n[[analyzer.policies.rules]]\n'
                             f'verdict = "alert"\nwhen = [{when}]\n')
    with pytest.raises(ConfigError, match=wrong):
        load_cloud_config(path)


def test_a_rule_that_never_holds_is_refused_at_load():
    rules = PolicyConfig.model_validate({"otherwise": "model", "rules": [{"verdict": "alert", "when": [
        {"zone": "gate"}, {"zone": "gate", "negated": True}]}]})
    with pytest.raises(ConfigError, match="can never hold"):
        PolicyBook([rules])
    with pytest.raises(ValueError, match="either text"):
        PolicyConfig.model_validate({"text": "Alert at night", "rules": [], "otherwise": "model"})


def test_policy_explain_prints_the_form_and_the_deciding_situations(capsys):
    assert cli_main(["cloud", "policy", "explain", "Alert on anyone at the gate after 9pm. Otherwise benign.",
                     "--zone", "gate"]) == 0
    out = capsys.readouterr().out
    assert "1. alert if: label = person and zone = gate and local time 21:00–06:00" in out
    assert "from the words: anyone | at the gate | after 9 pm" in out
    lines = [line.split("->") for line in out.splitlines() if "->" in line]
    table = {a.strip(): b.strip() for a, b in lines}
    assert table["20:59, in gate, person"] == "benign" and table["21:00, in gate, person"] == "alert"
    assert table["05:59, in gate, person"] == "alert" and table["06:00, in gate, person"] == "benign"
    assert table["05:59, in no zone, person"] == "benign" and table["05:59, in gate, car"] == "benign"
    assert cli_main(["cloud", "policy", "explain", "Alert after 25:00"]) == 2


def test_policy_explain_write_puts_the_form_into_the_config(tmp_path):
    words = "Alert on anybody at the gate on Friday or Saturday night."
    path = _config(tmp_path, f'[[analyzer.policies]]\ncamera = "gate"\nzone = "gate"\ntext = "{words}"\n')
    assert cli_main(["cloud", "policy", "explain", words, "--camera", "gate", "--config", path, "--write"]) == 0
    text = open(path, encoding="utf-8").read()
    assert f"# words: {words}" in text and "text =" not in text
    entry = load_cloud_config(path).analyzer.policies[0]
    assert (entry.camera, entry.zone, entry.text, entry.otherwise) == ("gate", "gate", None, "model")
    written = next(iter(PolicyBook([entry]).compiled.values()))
    said = compile_policy(words, ("gate",), "gate")
    assert [(c.verdict, c.conds) for c in written.clauses] == [(c.verdict, c.conds) for c in said.clauses]
    assert written.otherwise == said.otherwise == "model"


def test_a_place_named_with_a_side_word_is_that_place_and_in_front_of_still_reads():
    """'the front door' (README's first site) was NOT COMPILED: 'front' is a word of "in front of"."""
    text = "Alert only if someone stays at the front door longer than 30 s"
    assert [verdict(text, zones=z, dwell=d) for z, d in ((("front door",), 31.0), (("front door",), 30.0),
                                                          (("door",), 31.0))] == ["alert", "benign", "benign"]
    assert verdict("Alert if anyone is at the top gate", zones=("top gate",)) == "alert"
    assert verdict("Alert if someone is in front of the garage", zones=("garage",)) == "alert"
    assert verdict("Alert if someone is in front of the garage", zones=("shed",)) == "model"
