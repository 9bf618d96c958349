"""Questions that are neither a count nor a list but still answered from the store alone:

    duration   "how long did the person in the grey top stay?", "for how long was the car there?": the
               stays the device measured (each event's dwell), never a clock time read as a length
    unusual    "anything unusual?", "anything out of the ordinary last night?": what differs from the usual
               hours, zones, labels and counts of the same cameras (overview.py)
    overview   "sum up today", "what happened at the porch last night?", "what's been going on?": the events
               and what stands out among them (overview.py); a model adds nothing the facts do not hold
    unstored   what the store does not hold (number plates, speeds, names, ages, sounds, the weather): said so
               in one sentence, nothing made up
"""

from __future__ import annotations

import re

DURATION = re.compile(r"\b(?:for )?how long\b(?! ago)(?! since)(?! has it been since)(?! is it since)|"
                      r"\bhow much time\b|\bduration\b|\bdwell\w*\b|\b(?:total )?time (?:\w+ ){0,2}(?:spent|spend)\b|"
                      r"\bhow many (?:seconds|minutes|hours)\b(?! ago)|"
                      r"\b(?:length|time) of (?:the |their |his |her )?(?:stay|visit)\b")
UNUSUAL = re.compile(r"\b(?:unusual|out of the ordinary|strange|odd|weird|abnormal|anomal\w*|irregular|"
                     r"stand(?:s)? out|stood out|out of place|unexpected|different from usual|"
                     r"(?:anything|something) (?:i should know|to worry about|worth knowing|notable|noteworthy|"
                     r"interesting|new|wrong|amiss)|suspicious|worr(?:y|ied|ying)|concern(?:ed|ing)?|alarming)\b")
OVERVIEW = re.compile(r"\b(?:summar\w*|sum up|recap|overview|run ?down|catch me up|fill me in|what happened|"
                      r"what went on|what (?:was|is|s|has been|have been|been) (?:going on|happening)|"
                      r"what (?:has|have|s) been going on|how (?:was|did) (?:it|things|the day|today|the night) go)\b")
# a question about one thing in particular, which the descriptions may answer in words: the model's
DETAIL = re.compile(r"\b(?:why|doing|did they do|wear\w*|wore|look\w* like|describe|who|what kind|carrying|carried|"
                    r"holding|same|again|came back|come back|deliver\w*|parked|drop\w* off|behav\w*|set off|"
                    r"triggered|caused|recogni[sz]e|familiar)\b")
_UNSTORED = (
    (re.compile(r"\b(?:licen[cs]e|number|registration|reg) plates?\b|\bplate numbers?\b|\bnumber plate\b"),
     "number plates"),
    (re.compile(r"\bhow fast\b|\bspeed\w*\b|\b(?:mph|kmh|km h)\b"), "speeds"),
    (re.compile(r"\bweather\b|\btemperature\b|\braining\b|\bsnowing\b|\bsunny\b"), "the weather"),
    (re.compile(r"\b(?:his|her|their|the person|the driver|the visitor)s? names?\b|\bwhat (?:is|was) (?:he|she|they) "
                r"called\b|\bname of\b|\bidentity\b"), "names or identities"),
    (re.compile(r"\bhow old\b|\b(?:his|her|their) age\b|\bhow tall\b|\bheight\b|\bweigh\w*\b"),
     "ages, heights or weights"),
    (re.compile(r"\b(?:sounds?|noises?|heard|hear|voices?|talk\w*|shout\w*|bark\w*)\b"),
     "sounds or what was said"),
)
HOLDS = "they hold when and where something was seen, what it was, the verdict and a short description"


def kind_of(text: str) -> str | None:
    """"duration", "unusual", "overview", "unstored" or None, for a normalised question."""
    if unstored(text) is not None:
        return "unstored"
    if DURATION.search(text):
        return "duration"
    if DETAIL.search(text):
        return None
    if UNUSUAL.search(text):
        return "unusual"
    if OVERVIEW.search(text):
        return "overview"
    return None


def unstored_said(text: str) -> str | None:
    """The words of a normalised question that ask what the store does not hold ("plate numbers", "how fast")."""
    return next((found[0] for pattern, _ in _UNSTORED if (found := pattern.search(text))), None)


def unstored(text: str) -> str | None:
    """What the question asks for that the store does not hold, in words; None when it holds it."""
    return next((what for pattern, what in _UNSTORED if pattern.search(text)), None)


def unstored_sentence(what: str) -> str:
    return f"The stored events cannot tell {what}: {HOLDS}."
