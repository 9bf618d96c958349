"""The words reader (cloud/analysis/policy_words.py) at edges its other tests leave: who a clause is about comes
first in the form it shows, wherever the words say it (after a time said first). Each case is one that a
one-character slip in policy_words.py reads differently; its mutation score (bench/mutation.py) is judged with
these and the other policy word tests. Each sentence parsed once per machine (tests/policy_reads.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from edgetriage.cloud.analysis.policy_words import compile_policy
from policy_reads import remembered


@pytest.fixture(scope="module", autouse=True)
def _reads() -> Iterator[None]:
    yield from remembered()


@pytest.mark.parametrize(("text", "who"), [
    ("At night, alert on anyone at the gate.", "label = person"),
    ("At night, alert on cars at the gate.", "label = car"),
])
def test_who_comes_first_in_the_form_even_after_a_time_said_first(text, who):
    assert compile_policy(text, ("gate",)).plain() == (
        f"alert if: {who} and local time 22:00–06:00 and zone = gate; otherwise the model is asked "
        "(the words give no otherwise)")


def test_someone_beside_cars_is_a_person_not_the_cars():
    # "someone" is no pronoun for the cars: the clause would need a car that is a person, and is refused,
    # never read as "cars at the gate and in the yard"
    from edgetriage.cloud.analysis.policy_check import PolicyRefused

    with pytest.raises(PolicyRefused, match="can never hold .label = person and label = car"):
        compile_policy("Cars at the gate are fine unless someone is in the yard.", ("gate", "yard"))


def test_a_sentence_after_an_exception_joined_to_the_one_before_is_still_read():
    policy = compile_policy("Alert on anyone at the gate. Not if they are in hi-vis. Cars on the drive are fine.",
                            ("gate", "drive"))
    assert [c.verdict for c in policy.clauses] == ["benign", "alert", "benign"], policy.plain()
    assert policy.clauses[2].words() == "label = car and zone = drive"


def test_also_there_says_the_place_again():
    # "there" is the place of the sentence before: said again, so "also" takes that sentence's verdict
    policy = compile_policy("Alert on anyone with a knife in the yard. Also anybody there at night.", ("yard",))
    assert not policy.uncompiled, policy.plain()
    assert policy.clauses[1].verdict == "alert"
    assert policy.clauses[1].words() == "label = person and zone = yard and local time 22:00–06:00"


def test_the_builder_s_fields_are_types_python_can_read():
    import typing

    from edgetriage.cloud.analysis import policy_words

    hints = typing.get_type_hints(policy_words._Build, vars(policy_words))
    assert hints["last_when"] == policy_words.Cond | None


@pytest.mark.parametrize("when", [
    "at any time", "at all times", "anytime", "day or night", ", always",  # hours said: every hour
    "during opening hours", "outside those hours", "outside working hours, which are 9am to 5pm",  # named hours
])
def test_also_takes_the_verdict_before_where_its_words_say_when_again_in_any_way(when):
    before = ("We are open 9am to 5pm. Alert on anyone in the yard after closing." if "opening" in when
              else "Alert on anyone in the yard from 8pm to 6am.")
    policy = compile_policy(f"{before} Also anybody with a knife in the yard {when}.".replace(" ,", ","), ("yard",))
    assert not policy.uncompiled, policy.plain()
    also = policy.clauses[-1]
    assert also.verdict == "alert" and "carries knife" in also.words()
    assert also.used[-2:] == ("“Also”: another rule, no rule of its own",
                              "“also”: the verdict of the sentence before (alert)")


def test_also_that_does_not_say_when_again_is_not_compiled():
    policy = compile_policy("Alert on anyone in the yard from 8pm to 6am. Also anybody with a knife in the yard.",
                            ("yard",))
    assert policy.uncompiled == ("Also anybody with a knife in the yard",)


def test_without_also_a_sentence_with_no_verdict_takes_none_from_the_one_before():
    policy = compile_policy("Alert on anyone in the yard at night. Anybody with a knife in the yard at night.",
                            ("yard",))
    assert policy.uncompiled == ("Anybody with a knife in the yard at night",)


def test_an_exception_sentence_joins_only_a_sentence_that_says_a_verdict_first_or_after_its_subject():
    # "nobody should ..." is no verdict said of a subject: "Not if ..." after it is not read as its exception
    policy = compile_policy("Nobody should be at the gate at night. Not if they are in hi-vis.", ("gate",))
    assert policy.uncompiled == ("Nobody should be at the gate at night", "Not if they are in hi-vis")


def test_an_exception_sentence_joined_keeps_both_sentences_as_its_source_and_says_its_verdict_again():
    policy = compile_policy("Alert on anyone at the gate. Unless they are in hi-vis, then it's fine.", ("gate",))
    assert [c.source for c in policy.clauses] == ["Alert on anyone at the gate. Unless they are in hi-vis, then "
                                                  "it's fine"] * 2
    assert policy.clauses[0].used[-2:] == ("“then it's fine”: the exception's verdict, said again",
                                           "“Unless”: the exception of the sentence before")


def test_an_exception_sentence_that_reads_as_more_than_the_exception_is_not_joined_nor_dropped():
    policy = compile_policy("Alert on anyone at the gate. Not if they are in hi-vis, cars on the drive are fine.",
                            ("gate", "drive"))
    assert policy.uncompiled == ("Alert on anyone at the gate", "Not if they are in hi-vis, cars on the drive are fine")


def test_an_exception_joined_after_other_sentences_keeps_each_sentence_s_own_notes():
    policy = compile_policy("Cars on the drive are fine. Alert on anyone at the gate. Not if they are in hi-vis, "
                            "obviously.", ("gate", "drive"))
    assert not policy.uncompiled, policy.plain()
    assert [c.used for c in policy.clauses] == [
        ("cars", "on the drive"),
        ("anyone", "at the gate", "in hivis", "“obviously”: a hedge, no rule",
         "“Not if”: the exception of the sentence before"),
        ("anyone", "at the gate", "“obviously”: a hedge, no rule", "“Not if”: the exception of the sentence before"),
    ]


@pytest.mark.parametrize("opener", ["except", "unless", "but", "apart", "not", "excluding", "besides", "save",
                                    "however", "though", "although", "only"])
def test_a_sentence_not_compiled_that_opens_with_an_exception_word_leaves_the_one_before_not_compiled(opener):
    text = f"Alert on anyone at the gate. {opener.capitalize()} the postman wobbles. Cars on the drive are fine."
    policy = compile_policy(text, ("gate", "drive"))
    said = f"{opener.capitalize()} the postman wobbles"
    assert policy.uncompiled == ("Alert on anyone at the gate", said)
    assert policy.clauses[0].used == (f"not compiled: the next sentence, “{said}”, changes it and is not compiled",)
    assert policy.clauses[2].words() == "label = car and zone = drive"


def test_a_later_clause_about_them_comes_right_before_the_clause_it_narrows():
    policy = compile_policy("Alert on anyone at the gate. Alert on cars in the yard, but at night ignore them.",
                            ("gate", "yard"))
    assert [(c.verdict, c.words()) for c in policy.clauses] == [
        ("alert", "label = person and zone = gate"),
        ("benign", "label = car and zone = yard and local time 22:00–06:00"),
        ("alert", "label = car and zone = yard")]


@pytest.mark.parametrize("other", ["in a green top", "in a green top or a white top"])
def test_they_contrast_a_fact_said_as_either_of_two_looks(other):
    # "in a red top or a blue top" reads one fact (the top): "they" in a green top are the same people
    policy = compile_policy(f"Anyone in the yard in a red top or a blue top is an alert; {other} they are fine.",
                            ("yard",))
    assert not policy.uncompiled, policy.plain()
    assert policy.clauses[1].verdict == "benign"
    assert policy.clauses[1].words().startswith("label = person and zone = yard and ")


def test_the_camera_or_its_zone_is_asked_in_words():
    policy = compile_policy("Alert on anyone in the back garden.", ("garden",), "back garden")
    assert policy.clauses[0].used == ("not compiled: “the back garden”: this camera, or its zone “garden”?",)


def test_named_hours_said_inline_serve_a_later_sentence():
    policy = compile_policy("Alert on anyone in the yard outside working hours, which are 9am to 5pm. Cars on the "
                            "drive are fine during working hours.", ("yard", "drive"))
    assert not policy.uncompiled, policy.plain()
    assert policy.clauses[1].words() == "label = car and zone = drive and local time 09:00–17:00"
