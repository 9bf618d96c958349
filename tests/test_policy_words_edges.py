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
