"""The reading line and the named words, unit by unit (cloud/ask/reading.py): each part of the line an operator
reads ("People on porch, today 14:30–16:00 (Europe/Berlin, the camera's zone)") and each phrase an answer names
as not used is pinned down exactly, without a store or a model."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from edgetriage.cloud.ask.appearance import Look
from edgetriage.cloud.ask.reading import (
    could_not_use,
    other_labels,
    read_back,
    reading_line,
    told_unused,
    unread_times,
    unused,
    what_counted,
    when_said,
    where_said,
)
from edgetriage.cloud.ask.rules import Query, label_said_first, normalise
from edgetriage.cloud.ask.when import Window

ZONE = ZoneInfo("Europe/Berlin")


def at(day: int, hour: int, minute: int = 0) -> int:
    return int(datetime(2026, 12, day, hour, minute, tzinfo=ZONE).timestamp() * 1000)


NOW = at(4, 21, 30)
PORCH = frozenset({("house", "porch")})


def q(**fields) -> Query:
    return Query(intent=fields.pop("intent", "count"), open=False, **fields)


@pytest.mark.parametrize(("window", "said"), [
    (None, "any time"),
    (Window(at(4, 6), at(4, 12), ""), "today 06:00–12:00"),
    (Window(at(3, 0), at(4, 0), ""), "yesterday 00:00–24:00"),
    (Window(at(3, 18), at(4, 6), ""), "yesterday 18:00 – today 06:00"),
    (Window(at(4, 18), None, ""), "today 18:00–now (21:30)"),
    (Window(None, at(4, 9), ""), "until today 09:00"),
    (Window(None, None, ""), "any time"),
    (Window(at(1, 9), at(1, 10), ""), "Tue 01 Dec 09:00–10:00"),
    (Window(at(2, 0), at(3, 0), ""), "Wed 02 Dec 00:00–24:00"),
    (Window(at(1, 22), at(3, 2), ""), "Tue 01 Dec 22:00 – yesterday 02:00"),
])
def test_when_is_said_in_clock_times_with_days_said_from_now(window, said):
    assert when_said(q(window=window), ZONE, NOW) == said


@pytest.mark.parametrize(("fields", "measure", "said"), [
    ({}, "people", "People"), ({}, "visits", "Visits"), ({}, "events", "Events"),
    ({"verdict": "alert"}, "events", "Alerts"), ({"verdict": "benign"}, "events", "Events judged benign"),
    ({"label": "person"}, "events", "Events of people"), ({"label": "car"}, "events", "Events of cars"),
    ({"label": "bus", "verdict": "alert"}, "events", "Alerts of buses"),
    ({"label": "car"}, None, "Cars"), ({}, None, "Events"), ({"label": "person"}, "people", "People"),
])
def test_what_was_counted_is_said_first(fields, measure, said):
    assert what_counted(q(**fields), measure) == said


@pytest.mark.parametrize(("fields", "said"), [
    ({}, "on every camera"),
    ({"cameras": PORCH}, "on porch"),
    ({"cameras": PORCH | {("house", "back_door")}}, "on back_door or porch"),
    ({"zones": frozenset({"front_door"})}, "in zone front_door"),
    ({"devices": frozenset({"house"})}, "from house"),
    ({"devices": frozenset({"house"}), "cameras": PORCH}, "on porch"),
    ({"excluded": PORCH}, "on every camera except porch"),
    ({"cameras": frozenset({("house", "back_door")}), "excluded": PORCH}, "on back_door except porch"),
    ({"excluded_zones": frozenset({"front_door"})}, "outside zone front_door"),
])
def test_where_is_said_with_what_is_left_out(fields, said):
    assert where_said(q(**fields)) == said


def test_the_line_joins_what_where_when_zone_and_filters():
    query = q(cameras=PORCH, window=Window(at(4, 14, 30), at(4, 16), ""), verdict="alert",
              look=Look("grey", "top", None, ("in a grey top",)))
    line = reading_line(query, "people", ZONE, NOW, True, ["tall"])
    assert line == ("People on porch, today 14:30–16:00 (Europe/Berlin, the camera's zone); alerts only, "
                    "in a grey top; not used: 'tall'")
    site = reading_line(q(verdict="benign"), "visits", ZONE, NOW, False)
    assert site == "Visits on every camera, any time (Europe/Berlin, the site's zone); judged benign"
    assert "; judged" not in reading_line(q(verdict="benign"), "events", ZONE, NOW, False)  # said once


@pytest.mark.parametrize(("question", "used", "phrases"), [
    ("anyone without a hi vis vest today", (), ["without a hi vis vest"]),
    ("anyone at the entrance today", (), ["entrance"]),
    ("how many tall people today", (), ["tall"]),
    ("did the gardener look angry", (), ["gardener", "look angry"]),
    ("any people at the porch today", ("porch",), []),
    ("any people in a hurry wearing a cape", (), ["in a hurry", "wearing a cape"]),
    ("people at 9:30 on the 3rd", (), []),
])
def test_unused_phrases_keep_the_small_words_that_shape_them(question, used, phrases):
    assert unused(question.split(), used) == phrases


@pytest.mark.parametrize(("question", "phrases"), [
    ("anyone within the fortnight before christmas", []),  # no strong time word: unused() names "fortnight"
    ("anyone at the porch last spring", []),
    ("people on the 31st of the month", ["on the 31st of the month"]),
    ("anyone at 25:00 today", ["at 25:00 today"]),
    ("how many people", []),
])
def test_time_words_that_gave_no_range_are_named_as_said(question, phrases):
    assert unread_times(question.split()) == phrases


def test_the_named_words_stand_as_the_question_wrote_them():
    said = could_not_use(["without a hi vis vest", "x ray"], "Anyone WITHOUT a hi-vis vest? x_ray")
    assert said == "I could not use: 'WITHOUT a hi-vis vest', 'x_ray'."
    assert told_unused("Yes, 2.", [], "q") == "Yes, 2."
    assert told_unused("Yes, 2.", ["tall"], "tall?") == "Yes, 2. I could not use: 'tall'."
    assert told_unused("The stored events cannot tell.", ["plate"], "plate?", first=True) == (
        "I could not use: 'plate'; the stored events cannot tell.")


@pytest.mark.parametrize(("question", "label", "named"), [
    ("did anyone look into the car", "person", ["car"]),
    ("any cars or bikes", "car", ["bikes"]),
    ("nobody at the porch", "person", []),
    ("how many events with people", None, []),
])
def test_a_label_other_than_the_one_read_is_named(question, label, named):
    measure = "events" if "events" in question else None
    assert other_labels(question, q(label=label, measure=measure)) == named


def test_read_back_names_a_second_time_a_second_question_and_the_back():
    query = q(window=Window(at(4, 6), at(4, 12), "this morning"), times_apart=("this evening",))
    line, phrases = read_back(normalise("how many people this morning or this evening?"), query, ZONE, NOW)
    assert phrases == ["this evening"] and line.endswith("not used: 'this evening'")
    _, phrases = read_back("when did the first person come and when did the last leave", q(intent="first"), ZONE,
                           NOW)
    assert phrases == ["and when did the last leave"]
    _, phrases = read_back("anyone at the back today", q(window=Window(at(4, 0), None, "today")), ZONE, NOW)
    assert phrases == ["the back"]
    _, phrases = read_back("how long ago was the last person", q(intent="last"), ZONE, NOW)
    assert phrases == []


# the words of a question about events that carry no filter of their own: never named as not used
EVENT_WORDS = ("alert alerts alarm alarms event events detection detections notification notifications recording "
               "recordings clip clips trigger triggered triggers incident incidents activity movement motion verdict "
               "verdicts").split()
NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                "sixteen seventeen eighteen nineteen twenty thirty forty fifty couple few several").split()
TIME_WORDS = ("today yesterday tonight morning afternoon evening night overnight midnight noon lunchtime week weekend "
              "month hour minutes ago since before after between until mon tue wed thu fri sat sun jan feb dec "
              "monday sunday january december").split()


@pytest.mark.parametrize("word", EVENT_WORDS + NUMBER_WORDS + TIME_WORDS + ["nineish", "twelveish", "9ish"])
def test_a_word_the_rules_read_is_never_named_as_not_used(word):
    assert unused(["how", "many", word], ()) == [] and unused([word], ()) == []


def test_the_first_word_is_read_like_any_other():
    assert unused(["tall", "people", "today"], ()) == ["tall"]
    assert unused(["people", "today", "tall"], ()) == ["tall"]


@pytest.mark.parametrize("first", ["werent", "wasnt", "isnt", "arent", "hasnt", "havent", "hadnt", "doesnt", "dont",
                                   "didnt", "was", "any", "someone"])
def test_a_question_led_by_a_yes_no_word_is_read_as_a_yes_no(first):
    line, _ = read_back(f"{first} there people at the porch", q(intent=None, label="person"), ZONE, NOW)
    assert line.startswith("People ")
    listed, _ = read_back("people at the porch", q(intent=None), ZONE, NOW)
    assert listed.startswith("Events ")  # a list of every event


@pytest.mark.parametrize(("label", "measure", "said"), [("bus", None, "Buses"), ("person", None, "People"),
                                                         ("bus", "events", "Events of buses"),
                                                         ("person", "visits", "Visits"), ("car", "people", "People")])
def test_the_counted_things_are_named_in_plain_plurals(label, measure, said):
    assert what_counted(q(label=label), measure) == said


@pytest.mark.parametrize(("question", "named"), [("how many people came to each camera today", ["each camera"]),
                                                 ("how many people per hour today", ["per hour"]),
                                                 ("alerts broken down by zone", ["broken down by zone"])])
def test_a_split_the_answer_does_not_give_is_named(question, named):
    assert read_back(question, q(window=Window(at(4, 0), None, "today")), ZONE, NOW)[1] == named


@pytest.mark.parametrize(("question", "phrases"), [
    ("x with in not tall", ["x", "with in not tall"]),  # up to three small words before it shape it
    ("x a with in no not tall", ["x", "in no not tall"]),  # and no more
    ("did he look angry", ["look angry"]), ("did she seem angry", ["seem angry"]),
    ("tall with beard", ["tall with beard"]),  # a small word between two unread ones joins them
    ("tall with the porch", ["tall", "with the porch"]),
    ("people tall", ["tall"]), ("anyone at the entrance", ["entrance"]), ("any with tall", ["with tall"]),
    ("some tall", ["tall"]), ("the tall", ["tall"]), ("an odd one", ["odd"]),
])
def test_an_unread_phrase_is_cut_where_its_meaning_ends(question, phrases):
    assert unused(question.split(), ()) == phrases


@pytest.mark.parametrize(("words", "phrases"), [
    (["at", "9ish"], ["at 9ish"]), (["people", "on", "the", "31st"], ["on the 31st"]), (["7pm"], ["7pm"]),
    (["today"], ["today"]), (["on", "monday"], ["on monday"]), (["in", "january"], ["in january"]),
    (["a", "quarter", "of", "an", "hour"], ["quarter of an hour"]), (["at", "9:30"], ["at 9:30"]),
    (["the", "3rd", "at", "the"], ["3rd"]), (["people", "at", "the", "porch"], []),
    (["tall", "today", "and", "people", "tonight"], ["today", "tonight"]),
])
def test_a_time_said_without_a_range_is_named_from_its_first_time_word(words, phrases):
    assert unread_times(words) == phrases


@pytest.mark.parametrize(("question", "intent", "phrases"), [
    ("how long did they stay there", "duration", []), ("how long did they stay there", "count", ["long", "stay"]),
    ("how long did they linger", "duration", []), ("how much time did they spend", "duration", []),
    ("do you know if anyone came", "list", []), ("i want to know how many came", "list", []),
    ("let me know who came", "list", []), ("i wonder if anyone came", "list", []),
    ("can you tell me who came", "list", []), ("i need you to list people", "list", []),
    ("we wanted to see people", "list", []), ("would you know who came", "list", []),
    ("someone we know", "list", ["know"]),
])
def test_request_frames_and_stays_are_read_and_nowhere_else(question, intent, phrases):
    assert read_back(question, q(intent=intent, window=Window(at(4, 0), None, "today")), ZONE, NOW)[1] == phrases


# -- every branch of the line, pinned (reading.py's mutation survivors) ----------------------------------
def test_a_comparison_is_read_side_against_side_with_only_the_words_no_side_used():
    from edgetriage.cloud.ask.reading import both_read

    a = q(cameras=PORCH, label="person", window=Window(at(4, 0), None, "today"))
    b = q(cameras=frozenset({("house", "back_door")}), label="car", window=Window(at(3, 0), at(4, 0), "yesterday"))
    line, phrases = both_read(a, b, "people", ZONE, NOW, ["cars", "yesterday", "tall", "this evening"])
    assert phrases == ["tall"]  # the sides' labels and times are theirs
    assert line == ("People on porch, today 00:00–now vs people on back_door, yesterday 00:00–24:00 "
                    "(Europe/Berlin, the camera's zone); not used: 'tall'")
    site, _ = both_read(q(), q(window=Window(at(3, 0), at(4, 0), "")), None, ZONE, NOW, [])
    assert site.endswith("(Europe/Berlin, the site's zone)") and site.startswith("Events on every camera, any time vs ")
    zoned, _ = both_read(q(zones=frozenset({"front_door"})), q(), None, ZONE, NOW, [])
    assert "the camera's zone" in zoned


@pytest.mark.parametrize(("fields", "said"), [
    ({"zones": frozenset({"front_door", "gate"})}, "in zone front_door or gate"),
    ({"devices": frozenset({"house", "lodge"})}, "from house or lodge"),
    ({"excluded": PORCH | {("house", "back_door")}}, "on every camera except back_door and porch"),
    ({"excluded_zones": frozenset({"front_door", "gate"})}, "outside zone front_door and gate"),
])
def test_several_places_are_all_said(fields, said):
    assert where_said(q(**fields)) == said


def test_a_day_after_today_is_tomorrow_and_the_unused_are_listed_apart():
    assert when_said(q(window=Window(at(5, 9), at(5, 10), "")), ZONE, NOW) == "tomorrow 09:00–10:00"
    line = reading_line(q(), "people", ZONE, NOW, False, ["tall", "old"])
    assert line.endswith("; not used: 'tall', 'old'")


@pytest.mark.parametrize(("question", "fields", "counted"), [
    ("people at the porch", {"intent": "list", "label": "person"}, "People"),
    ("cars at the porch", {"intent": "list", "label": "car"}, "Cars"),
    ("events at the porch", {"intent": "exists"}, "Events"),
    ("how many visits", {"intent": "count", "measure": "visits", "label": "person"}, "Visits"),
    ("how many cars", {"intent": "count", "label": "car"}, "Cars"),
])
def test_what_a_line_counts_follows_the_answer_s_kind(question, fields, counted):
    line, _ = read_back(question, q(window=Window(at(4, 0), None, "today"), **fields), ZONE, NOW)
    assert line.startswith(counted + " on every camera, today 00:00–now")


@pytest.mark.parametrize(("question", "fields", "phrases"), [
    ("anyone at the back of the house", {}, ["the back of the house"]),
    ("anyone at the back", {}, ["the back"]),
    ("anyone at the back door", {"names": frozenset({"back door"})}, []),
    ("anyone not at home", {"negated_bare": ("not at home",)}, ["not at home"]),
    ("anyone not wearing a cape", {"negated_bare": ("not wearing a cape",)}, ["not wearing a cape"]),  # said once
    ("how long has it been since someone came", {"intent": "last"}, []),
    ("how long ago did someone come", {"intent": "last"}, []),
    ("how long did they stay today", {"intent": "duration", "window": None}, []),  # a stay, not a time
    ("what happened and who came", {"intent": "overview"}, []),  # an overview tells it all
    ("anything unusual and who came", {"intent": "unusual"}, []),
    ("when did they come and who was it", {"intent": "last"}, ["and who was it"]),
    ("anyone with a dog", {"look": Look(None, None, "dog", ("with a dog",)), "label": "person"}, []),
    ("how many people", {"label": "person"}, []),
    ("nobody with cars", {"label": "person"}, ["cars"]),
    ("any events with people and cars", {"measure": "events"}, []),
    ("any people and cars", {"label": None}, ["cars"]),
])
def test_read_back_names_exactly_what_no_reader_used(question, fields, phrases):
    fields = {"window": Window(at(4, 0), None, "today"), **fields}
    assert read_back(question, q(**fields), ZONE, NOW)[1] == phrases


@pytest.mark.parametrize(("question", "intent"), [("anything unusual last night", "unusual"),
                                                  ("anything out of the ordinary today", "unusual"),
                                                  ("sum up today", "overview"), ("what happened today", "overview"),
                                                  ("how much time did they spend", "duration")])
def test_the_words_that_chose_the_kind_of_answer_are_used(question, intent):
    assert read_back(question, q(intent=intent, window=Window(at(4, 0), None, "today")), ZONE, NOW)[1] == []


@pytest.mark.parametrize(("words", "phrases"), [
    (["without", "hi", "vis"], ["without hi vis"]), (["a", "cape"], ["cape"]), (["any", "cape"], ["cape"]),
    (["angry", "look"], ["angry"]), (["look", "angry"], ["look angry"]),
    (["tall", "the", "cape"], ["tall", "cape"]), (["tall", "a", "cape"], ["tall", "cape"]),
    (["tall", "an", "odd"], ["tall", "odd"]), (["tall", "with"], ["tall"]),
    (["tall", "odd", "people", "cape"], ["tall odd", "cape"]),
])
def test_where_an_unread_phrase_starts_and_stops(words, phrases):
    assert unused(words, ()) == phrases


@pytest.mark.parametrize(("words", "phrases"), [
    (["in", "a", "week"], ["in a week"]), (["an", "hour"], ["hour"]), (["of", "today"], ["today"]),
    (["today", "a"], ["today"]), (["today", "an"], ["today"]), (["today", "of"], ["today"]),
    (["today", "in"], ["today"]), (["today", "on"], ["today"]), (["today", "at"], ["today"]),
    (["on", "monday", "in", "the"], ["on monday"]), (["monday", "in"], ["monday"]),
])
def test_a_named_time_loses_the_small_words_at_its_ends(words, phrases):
    assert unread_times(words) == phrases


@pytest.mark.parametrize(("question", "fields", "named"), [
    ("events with cars", {"label": None, "measure": "events"}, []),
    ("events with people and cars", {"label": "person", "measure": "events"}, ["cars"]),
    ("anything with cars", {"label": None}, ["cars"]),
    ("cars and people", {"label": "car"}, ["people"]),
    ("cars and nobody", {"label": "car"}, []),
])
def test_which_other_labels_are_named(question, fields, named):
    assert other_labels(question, q(**fields)) == named


def test_names_looks_greetings_and_how_long_since_are_used_together():
    today = Window(at(4, 0), None, "today")
    look = Look(None, None, "dog", ("with a dog",))
    assert read_back("anyone at the porch with a dog", q(names=frozenset({"porch"}), look=look, window=today),
                     ZONE, NOW)[1] == []
    assert read_back("how long since someone came to the porch", q(intent="last", names=frozenset({"porch"})),
                     ZONE, NOW)[1] == []
    assert read_back("hey tall people", q(window=today), ZONE, NOW)[1] == ["tall"]
    line, _ = read_back("people at the porch", q(intent="list", label="person", cameras=PORCH, window=today,
                                                  names=frozenset({"porch"})), ZONE, NOW)
    assert line.endswith("(Europe/Berlin, the camera's zone)")


def test_the_last_branches_of_the_line():
    from edgetriage.cloud.ask.reading import both_read

    today = Window(at(4, 0), None, "today")
    assert read_back("they lingered at the door", q(intent="duration", window=today), ZONE, NOW)[1] == ["door"]
    assert read_back("what was the dwell time", q(intent="duration", window=today), ZONE, NOW)[1] == []
    assert unread_times(["today", "at", "tall"]) == ["today"]
    assert other_labels("cars and no one else", q(label="car")) == []
    assert read_back("anyone at the back", q(names=frozenset({"back"}), window=today), ZONE, NOW)[1] == []
    alerts, _ = read_back("any alerts", q(intent="exists", verdict="alert", window=today), ZONE, NOW)
    assert alerts.startswith("Alerts on every camera")
    assert when_said(q(window=Window(at(2, 0), at(4, 0), "")), ZONE, NOW) == "Wed 02 Dec 00:00 – today 00:00"
    one_side, _ = both_read(q(cameras=PORCH), q(), None, ZONE, NOW, [])
    assert one_side.endswith("(Europe/Berlin, the camera's zone)")


@pytest.mark.parametrize(("text", "label"), [
    ("did more dog walkers come", "person"),  # a label's word before a person's role says which person
    ("any dog owners at the porch", "person"),
    ("how many car drivers today", "person"),
    ("how many cars people and bikes today", "car"),  # "cars, people" with the comma gone: no compound
    ("any dogs at the porch", "dog"),
    ("did the neighbours cat come into the garden", "cat"),  # whose cat: the cat
])
def test_the_label_is_the_head_of_a_compound_of_labels(text, label):
    assert label_said_first(text) == label


def test_quiet_is_read_as_yes_only_if_none_in_a_yes_no_and_named_elsewhere():
    said = normalise("was the porch quiet")
    line, phrases = read_back(said, q(intent="exists", cameras=PORCH, names=frozenset({"porch"})), ZONE, NOW)
    assert phrases == [] and line == "Events on porch, any time (Europe/Berlin, the camera's zone); yes only if none"
    said = normalise("no activity at the porch, right?")
    line, phrases = read_back(said, q(intent="exists", cameras=PORCH, names=frozenset({"porch"}),
                                      negated_bare=("no activity at the porch",)), ZONE, NOW)
    assert phrases == [] and line.endswith("; yes only if none")
    line, phrases = read_back(normalise("how many people came while it was quiet"), q(label="person",
                                                                                      measure="people"), ZONE, NOW)
    assert phrases == ["quiet"] and "yes only" not in line
    assert reading_line(q(), None, ZONE, NOW, False, ["x"], ("yes only if none",)).endswith(
        "(Europe/Berlin, the site's zone); yes only if none; not used: 'x'")


@pytest.mark.parametrize(("question", "query"), [
    ("would a bike ride by", q(intent="exists", label="bicycle")),  # the bike's verb, read with its noun
    ("any bike cycling", q(intent="exists", label="bicycle")),
    ("did the alarm ring", q(intent="exists")), ("how often did an alert ring", q()),  # the alert's verb
    ("how long did they stay", q(intent="duration")), ("how long was it active", q(intent="duration")),
])
def test_a_verb_read_with_its_noun_is_used(question, query):
    assert read_back(question, query.with_scope(window=Window(at(4, 0), None, "today")), ZONE, NOW)[1] == []


@pytest.mark.parametrize(("words", "named"), [
    ("anyone before 9", ["before 9"]), ("anyone throughout ten", ["throughout ten"]),  # a relation and a time
    *[(f"anyone before {w} door", []) for w in ("the", "a", "an", "of", "in", "on", "at")],  # small words: none
])
def test_a_relation_to_a_time_is_named_and_a_relation_to_nothing_is_not(words, named):
    assert unread_times(words.split()) == named


def test_a_negated_look_no_rule_applies_is_named_once_and_a_bare_negation_too():
    today = Window(at(4, 0), None, "today")
    assert read_back("anyone not carrying a bag today", q(intent="exists", negated=("not carrying a bag",),
                                                          window=today), ZONE, NOW)[1] == ["not carrying a bag"]
    assert read_back("anyone not at home today", q(intent="exists", negated_bare=("not at home",), window=today),
                     ZONE, NOW)[1] == ["not at home"]
