"""shared.reuse's promises at their edges (issue 31): an embedding exactly at `min_similarity`, gallery keys at
half the rule's distance, the track guard's boundary, and the rest of the rule directly (keys, ranking,
policy ranges, filing, prompt versions). Pure functions on real hashes and embeddings: well under a second."""

from __future__ import annotations

from edgetriage.shared.embedding import similarity
from edgetriage.shared.protocol import Detection, ReuseRule
from edgetriage.shared.reuse import Candidate, continues, further_key, match
from promise_kit import PHASH, flip, make_embedding, make_event


# -- shared.reuse at its edges ------------------------------------------------------------------------------
def test_an_embedding_exactly_at_min_similarity_reaches_the_crop():
    a, b = make_embedding(1), make_embedding(3)
    s = similarity(a, b)
    far = flip(PHASH, 64)
    assert match(Candidate("v", PHASH, 8, 0, 60, a, s), far, b) is not None
    assert match(Candidate("v", PHASH, 8, 0, 60, a, s + 1e-6), far, b) is None


def test_a_gallery_key_reaches_only_half_the_rule_s_distance():
    key = further_key(Candidate("v", PHASH, 8, 5, 60), flip(PHASH, 20), None)
    assert (key.ref, key.made_ms, key.ttl_s, key.max_distance) == ("v", 5, 60, 4)
    assert match(key, flip(flip(PHASH, 20), 4), None) is not None
    assert match(key, flip(flip(PHASH, 20), 5), None) is None


def test_a_look_exactly_at_min_similarity_continues_its_track():
    a, b = make_embedding(1), make_embedding(3)
    s = similarity(a, b)
    assert continues([a], b, s)
    assert not continues([a], b, s + 1e-6)


# -- shared.reuse, the rest of the rule ------------------------------------------------------------------------
def _rule(**fields) -> ReuseRule:
    base = {"scope": "camera", "device": "house", "camera": "porch", "site": "home", "label": "person",
            "phash": PHASH, "max_distance": 6, "prompt_version": "person-3", "ttl_s": 60}
    return ReuseRule(**{**base, **fields})


def test_rule_keys_and_buckets():
    from edgetriage.shared.reuse import bucket, rule_key, scope_key

    assert scope_key("site", "house", "porch", "home") == "site:home"
    assert scope_key("site", "house", "porch", None) == "camera:house/porch"  # no site: its camera alone
    assert scope_key("camera", "house", "porch", "home") == "camera:house/porch"
    assert rule_key(_rule(scope="site")) == "site:home"
    assert bucket(_rule()) == ("camera:house/porch", "person", "dct64", "person-3")


def test_distance_reach_and_would_answer_at_their_edges():
    from edgetriage.shared.reuse import distance, reach, would_answer

    rule = _rule(embedding=make_embedding(1), min_similarity=0.97)
    assert distance(rule, "person", flip(PHASH, 6), "dct64") == 6
    assert distance(rule, "person", flip(PHASH, 7), "dct64") is None
    assert distance(rule, "person", flip(PHASH, 6), "dct64", cap=5) is None
    assert distance(rule, "person", flip(PHASH, 5), "dct64", cap=5) == 5
    assert distance(rule, "car", PHASH, "dct64") is None
    by_hash = reach(rule, "person", flip(PHASH, 2), "dct64")
    assert (by_hash.key, by_hash.threshold, by_hash.distance, by_hash.similarity) == ("hash", 6, 2, None)
    by_look = reach(rule, "person", flip(PHASH, 30), "dct64", make_embedding(1))
    assert (by_look.key, by_look.threshold, by_look.distance, round(by_look.similarity, 6)) == (
        "embedding", 0.97, 30, 1.0)
    assert reach(rule, "person", flip(PHASH, 30), "dct64", make_embedding(2)) is None
    assert reach(rule, "car", PHASH, "dct64") is None
    assert would_answer(rule, scope="camera:house/porch", label="person", phash=PHASH, phash_alg="dct64",
                        prompt_version="person-3")
    assert not would_answer(rule, scope="site:home", label="person", phash=PHASH, phash_alg="dct64",
                            prompt_version="person-3")
    assert not would_answer(rule, scope="camera:house/porch", label="person", phash=PHASH, phash_alg="dct64",
                            prompt_version="person-4")
    assert would_answer(rule, scope="camera:house/porch", label="person", phash=flip(PHASH, 40),
                        phash_alg="dct64", prompt_version="person-3", embedding=make_embedding(1))


def test_still_answers_checks_the_winner_s_own_rule_and_its_ttl():
    from edgetriage.shared.reuse import still_answers

    rule = _rule(embedding=make_embedding(1))
    assert still_answers(rule, 1000, "person", PHASH, "dct64", 61_000)  # the TTL's last millisecond
    assert not still_answers(rule, 1000, "person", PHASH, "dct64", 61_001)
    assert not still_answers(None, 1000, "person", PHASH, "dct64", 1000)
    assert not still_answers(rule, 1000, "person", flip(PHASH, 7), "dct64", 1000)
    assert still_answers(rule, 1000, "person", flip(PHASH, 40), "dct64", 1000, make_embedding(1))
    assert not still_answers(rule, 1000, "car", PHASH, "dct64", 1000)


def test_a_hash_match_ranks_before_an_embedding_match_then_nearer_newer_smaller_id():
    from edgetriage.shared.reuse import best, nearest

    face = make_embedding(1)
    by_look = Candidate("a", flip(PHASH, 40), 6, 100, 60, face, 0.5)
    far_hash = Candidate("b", flip(PHASH, 5), 6, 50, 60)
    assert nearest([by_look, far_hash], PHASH, 1000, embedding=face) is far_hash
    found, how = best([by_look, far_hash], PHASH, 1000, embedding=face)
    assert found is far_hash and how.key == "hash" and how.distance == 5
    near = Candidate("c", flip(PHASH, 1), 6, 10, 60)
    newer = Candidate("d", flip(PHASH, 1), 6, 20, 60)
    same_time = Candidate("0", flip(PHASH, 1), 6, 20, 60)
    assert nearest([far_hash, near], PHASH, 1000) is near
    assert nearest([near, newer], PHASH, 1000) is newer and nearest([newer, near], PHASH, 1000) is newer
    assert nearest([newer, same_time], PHASH, 1000) is same_time
    closer_look = Candidate("e", flip(PHASH, 40), 6, 10, 60, face, 0.5)
    other_look = Candidate("f", flip(PHASH, 40), 6, 900, 60, make_embedding(5), 0.0)
    assert nearest([other_look, closer_look], PHASH, 1000, embedding=face) is closer_look  # higher similarity
    found, how = best([closer_look], PHASH, 1000, embedding=face)
    assert how.key == "embedding" and how.threshold == 0.5 and how.distance == 40 and how.similarity > 0.99
    assert nearest([near], PHASH, 10 + 60_000) is near and nearest([near], PHASH, 10 + 60_001) is None
    assert nearest([Candidate("g", flip(PHASH, 3), 6, 10, 60)], PHASH, 1000, cap=2) is None
    assert best([], PHASH, 1000) is None


def test_a_policy_that_read_facts_answers_only_events_in_the_same_ranges():
    from edgetriage.shared.policycell import EventFacts, PolicyInputs
    from edgetriage.shared.reuse import nearest

    inputs = PolicyInputs(minutes=(600, 700))
    cell = Candidate("a", PHASH, 6, 10, 60, None, 0.97, inputs)
    at = EventFacts(650, 7, frozenset(), -1.0, "", 1)
    assert nearest([cell], PHASH, 1000, facts=at) is cell
    assert nearest([cell], PHASH, 1000, facts=at._replace(minute=700)) is None
    assert nearest([cell], PHASH, 1000) is None  # facts unknown: never
    look = Candidate("b", PHASH, 6, 10, 60, make_embedding(1), 0.5, PolicyInputs(look=True))
    assert match(look, flip(PHASH, 2), None) is not None and match(look, flip(PHASH, 3), None) is None
    assert match(look, flip(PHASH, 30), make_embedding(1)) is None  # a look is never matched by embedding
    assert match(look._replace(max_distance=1), flip(PHASH, 2), None) is None
    assert match(look, flip(PHASH, 2), None, cap=1) is None


def test_a_near_copy_of_a_live_source_is_not_filed_again():
    from edgetriage.shared.reuse import worth_filing

    source = Candidate("src", PHASH, 8, 1000, 60)
    assert not worth_filing(_rule(phash=flip(PHASH, 4)), "new", "src", source, 2000)  # half of 8: a near copy
    assert worth_filing(_rule(phash=flip(PHASH, 5)), "new", "src", source, 2000)
    assert worth_filing(_rule(phash=PHASH), "new", "src", source, 61_001)  # the source expired
    assert not worth_filing(_rule(phash=PHASH), "new", "src", source, 61_000)
    assert worth_filing(_rule(phash=PHASH), "new", None, source, 2000)  # the model's own answer
    assert worth_filing(_rule(phash=PHASH), "src", "src", source, 2000)
    assert worth_filing(_rule(phash=PHASH), "new", "src", None, 2000)  # its source is not filed


def test_novel_looks_and_further_keys():
    from edgetriage.shared.reuse import novel

    keys = [Candidate("v", PHASH, 4, 5, 60, make_embedding(1), 0.97)]
    assert not novel(keys, flip(PHASH, 4), None) and novel(keys, flip(PHASH, 5), None)
    assert not novel(keys, flip(PHASH, 40), make_embedding(1)) and novel(keys, flip(PHASH, 40), make_embedding(2))
    assert novel(keys, flip(PHASH, 4), None, cap=3) and novel([], PHASH, None)
    key = further_key(keys[0], flip(PHASH, 30), make_embedding(2))
    assert (key.phash, key.embedding, key.min_similarity, key.max_distance) == (
        flip(PHASH, 30), make_embedding(2), 0.97, 2)
    assert continues([], make_embedding(1), 0.97) and continues([make_embedding(1)], None, 0.97)
    assert continues([make_embedding(2), make_embedding(1)], make_embedding(1), 0.97)  # the best of the track's looks


def test_an_event_s_facts_as_a_policy_reads_them():
    from edgetriage.shared.reuse import PEOPLE_MIN, event_facts

    event = make_event().model_copy(update={
        "local_time": "21:07", "zones": ["Loading_Zone", "door"], "dwell_s": 12, "direction": "left",
        "detections": [Detection(label="person", score=PEOPLE_MIN, box=(0, 0, 1, 1)),
                       Detection(label="person", score=0.9, box=(0, 0, 1, 1)),
                       Detection(label="person", score=PEOPLE_MIN - 0.01, box=(0, 0, 1, 1)),
                       Detection(label="car", score=0.9, box=(0, 0, 1, 1))]})
    facts = event_facts(event)
    assert (facts.minute, facts.zones, facts.dwell_s, facts.direction, facts.people) == (
        21 * 60 + 7, frozenset({"loading", "door"}), 12.0, "left", 2)  # people, not the car
    assert event_facts(event.model_copy(update={"local_time": "09:17"})).minute == 9 * 60 + 17
    assert 0 <= facts.weekday <= 6
    bare = event_facts(make_event())
    assert (bare.minute, bare.weekday, bare.dwell_s, bare.direction) == (-1, 7, -1.0, "")


def test_a_prompt_version_carries_the_policy_s_ranges():
    from edgetriage.shared.policycell import PolicyInputs
    from edgetriage.shared.reuse import CELL_MARK, prompt_base, with_inputs

    assert with_inputs("person-3", None) == "person-3"
    one = with_inputs("person-3", PolicyInputs(minutes=(0, 60)))
    two = with_inputs("person-3", PolicyInputs(minutes=(60, 120)))
    assert one.startswith("person-3" + CELL_MARK) and len(one) == len("person-3") + 7 and one != two
    assert one == with_inputs("person-3", PolicyInputs(minutes=(0, 60)))
    long = with_inputs("p" * 40, PolicyInputs())
    assert len(long) == 32 and long.startswith("p" * 25 + CELL_MARK)
    assert prompt_base(one) == "person-3" and prompt_base("person-3") == "person-3"
    assert with_inputs(one, PolicyInputs(minutes=(60, 120))) == two  # ranges replaced, not added


def test_a_candidate_s_defaults_and_a_look_match_is_a_hash_match():
    from edgetriage.shared.policycell import PolicyInputs
    from edgetriage.shared.reuse import DEFAULT_MIN_SIMILARITY, best

    plain = Candidate("v", PHASH, 8, 0, 60)
    assert (plain.embedding, plain.min_similarity, plain.inputs) == (None, DEFAULT_MIN_SIMILARITY, None)
    assert plain.operator is False  # a bool, as the stores file it: a model's verdict unless said otherwise
    face = make_embedding(1)
    assert match(Candidate("v", PHASH, 8, 0, 60, face), flip(PHASH, 40), face).key == "embedding"
    look = Candidate("v", PHASH, 8, 0, 60, None, 0.97, PolicyInputs(look=True))
    found, how = best([look], flip(PHASH, 2), 1000, facts=None) or (None, None)
    assert found is None  # a policy that read facts answers nothing without them
    how = match(look, flip(PHASH, 2), None)
    assert (how.key, how.distance, how.threshold, how.similarity) == ("hash", 2, 8, None)


def test_an_operator_s_verdict_ranks_before_a_nearer_model_answer():
    from edgetriage.shared.reuse import best, nearest

    model = Candidate("m", flip(PHASH, 1), 8, 900, 60)  # a model's answer: filed without saying so
    operator = Candidate("o", flip(PHASH, 6), 8, 10, 60, operator=True)  # farther and older, but the operator's
    assert nearest([model, operator], PHASH, 1000) is operator and nearest([operator, model], PHASH, 1000) is operator
    found, how = best([model, operator], PHASH, 1000)
    assert found is operator and how.distance == 6
    assert nearest([model, Candidate("n", flip(PHASH, 2), 8, 900, 60)], PHASH, 1000) is model  # among the model's


def test_an_expired_candidate_never_hides_a_live_one_after_it():
    from edgetriage.shared.policycell import EventFacts, PolicyInputs
    from edgetriage.shared.reuse import nearest

    expired = Candidate("old", PHASH, 8, 0, 1)  # gone at 1,001 ms
    live = Candidate("new", flip(PHASH, 3), 8, 5000, 60)
    assert nearest([expired, live], PHASH, 10_000) is live and nearest([live, expired], PHASH, 10_000) is live
    other_hours = Candidate("cell", PHASH, 8, 5000, 60, None, 0.97, PolicyInputs(minutes=(0, 60)))
    at = EventFacts(600, 2, frozenset(), -1.0, "", 1)
    assert nearest([other_hours, live], PHASH, 10_000, facts=at) is live  # another policy range: passed over
    assert nearest([Candidate("far", flip(PHASH, 20), 8, 5000, 60), live], PHASH, 10_000) is live


def test_among_embedding_matches_the_more_similar_then_the_newer_wins():
    from edgetriage.shared.reuse import nearest

    face = make_embedding(1)
    near_face = bytes((b + (3 if i % 2 else 0)) % 256 for i, b in enumerate(face))  # a little off
    assert 0.9 < similarity(face, near_face) < similarity(face, face)
    far = flip(PHASH, 40)
    exact = Candidate("a", far, 6, 10, 60, face, 0.5)
    close = Candidate("b", far, 6, 900, 60, near_face, 0.5)  # newer, but less alike
    assert nearest([close, exact], PHASH, 1000, embedding=face) is exact
    assert nearest([exact, close], PHASH, 1000, embedding=face) is exact
    older, newer = Candidate("c", far, 6, 10, 60, face, 0.5), Candidate("d", far, 6, 20, 60, face, 0.5)
    assert nearest([older, newer], PHASH, 1000, embedding=face) is newer
    assert nearest([newer, older], PHASH, 1000, embedding=face) is newer


def test_a_gallery_key_of_an_odd_distance_reaches_half_of_it_in_whole_bits():
    key = further_key(Candidate("v", PHASH, 7, 5, 60), flip(PHASH, 20), None)
    assert key.max_distance == 3 and isinstance(key.max_distance, int)
    how = match(key, flip(flip(PHASH, 20), 3), None)
    assert how is not None and how.threshold == 3
    assert match(key, flip(flip(PHASH, 20), 4), None) is None
