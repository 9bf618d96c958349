"""Blind test set policies_blind2: 70 camera policies written from SPEC.md only.

Each meaning returns "alert" | "benign" | "model" for a full facts dict f (DEFAULTS merged with a case).
Meanings are written as plain two-valued Python and wrapped in U(...), which applies conventions 3 and the
product's "a condition whose fact the event did not send does not decide anything": when hivis, upper, lower or
direction is None, the meaning is evaluated for every possible value of the unknown facts; if all agree, that
verdict stands, otherwise the verdict is "model".
"""

DEFAULTS = {"time": "12:00", "weekday": "Wed", "zones": [], "dwell_s": 5.0, "direction": None, "people": 1,
            "label": "person", "hivis": False, "upper": None, "lower": None, "carries": []}

COLOURS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "white", "grey", "black")
DIRECTIONS = ("towards", "away", "left", "right")
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _m(t):
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def within(t, a, b):
    t, a, b = _m(t), _m(a), _m(b)
    if a < b:
        return a <= t < b
    return t >= a or t < b          # wraps midnight (b <= a)


WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri"); WEEKEND = ("Sat", "Sun")


def person(f): return f["label"] == "person"


def Z(f, *names): return any(n in f["zones"] for n in names)


# ---- helpers -------------------------------------------------------------------------------------------
def T(f, a, b):
    """local time in the window a-b (start included, end excluded, wraps midnight)"""
    return within(f["time"], a, b)


def day(f, *days): return f["weekday"] in days


def starts_on(f, a, b, days):
    """time in window a-b and the window started on one of days (Fri with 22:00-06:00 holds Sat 02:00)"""
    if not within(f["time"], a, b):
        return False
    d = f["weekday"]
    if _m(a) >= _m(b) and _m(f["time"]) < _m(b):      # after-midnight part of a wrapping window
        d = DAYS[(DAYS.index(d) - 1) % 7]
    return d in days


def has(f, *things): return any(c in f["carries"] for c in things)


def lab(f, *labels): return f["label"] in labels


def U(fn):
    """three-valued wrapper: unknown hivis / upper / lower / direction decide nothing (see module docstring)"""
    def meaning(f):
        worlds = [dict(f)]
        for key, values in (("hivis", (True, False)), ("upper", COLOURS), ("lower", COLOURS),
                            ("direction", DIRECTIONS)):
            if f.get(key) is None:
                worlds = [dict(w, **{key: v}) for w in worlds for v in values]
        verdicts = {fn(w) for w in worlds}
        return verdicts.pop() if len(verdicts) == 1 else "model"
    return meaning


# ---- meanings that need several lines ------------------------------------------------------------------
def _c03(f):
    if person(f) and has(f, "knife"):
        return "alert"
    if person(f) and Z(f, "stockroom door") and T(f, "17:30", "08:00"):
        return "alert"
    return "model"


def _c04(f):
    if Z(f, "gate") and T(f, "07:00", "19:00"):
        return "benign"
    if Z(f, "gate") and lab(f, "person", "car", "truck"):
        return "alert"
    return "model"


def _c06(f):
    if person(f) and Z(f, "fence"):
        if T(f, "08:00", "16:00"):
            return "benign"
        if f["dwell_s"] > 60:
            return "alert"
    return "model"


def _c07(f):
    if lab(f, "horse", "cow") and Z(f, "paddock"):
        return "benign"
    if lab(f, "dog") and Z(f, "paddock"):
        return "alert"
    if person(f) and Z(f, "barn door") and T(f, "21:00", "05:00"):
        return "alert"
    return "model"


def _c08(f):
    if lab(f, "car", "truck", "motorcycle") and Z(f, "ramp"):
        return "benign"
    if person(f) and Z(f, "ramp") and f["dwell_s"] >= 20:
        return "alert"
    return "model"


def _c11(f):
    if lab(f, "car") and Z(f, "ambulance bay") and f["dwell_s"] > 300:
        return "alert"
    if lab(f, "truck", "bus") and Z(f, "ambulance bay"):
        return "benign"
    if person(f) and Z(f, "entrance") and f["direction"] == "towards":
        return "benign"
    return "model"


def _c12(f):
    if person(f) and Z(f, "pontoon A", "pontoon B") and T(f, "00:00", "05:00"):
        return "benign" if f["hivis"] else "alert"
    return "model"


def _c13(f):
    if person(f) and Z(f, "corridor") and f["people"] >= 2:
        return "benign"
    if person(f) and Z(f, "cage 1", "cage 2") and f["people"] < 2:
        return "alert"
    return "model"


def _c14(f):
    if person(f) and Z(f, "shed") and f["direction"] == "away":
        if has(f, "backpack", "handbag", "suitcase"):
            return "alert"
        if not f["carries"]:
            return "benign"
    return "model"


def _c15(f):
    if person(f) and Z(f, "pavement") and f["direction"] in ("left", "right"):
        return "benign"
    if person(f) and Z(f, "doorway") and T(f, "21:00", "07:00"):
        return "alert"
    return "model"


def _c16(f):
    if lab(f, "truck") and Z(f, "yard"):
        return "benign"
    if person(f) and Z(f, "fuel tank"):
        return "alert"
    return "model"


def _c17(f):
    office = day(f, *WEEKDAYS) and T(f, "08:30", "18:00")
    if person(f) and Z(f, "lobby") and office:
        return "benign"
    if person(f) and Z(f, "lobby", "lifts") and not office:
        return "alert"
    return "model"


def _c18(f):
    if lab(f, "bicycle"):
        return "benign"
    if person(f) and Z(f, "bike racks") and has(f, "backpack") and f["dwell_s"] > 120 and day(f, *WEEKEND):
        return "alert"
    return "model"


def _c20(f):
    if lab(f, "cat", "dog"):
        return "benign"
    if person(f) and Z(f, "lawn", "patio") and T(f, "00:00", "05:30"):
        return "alert"
    if person(f) and Z(f, "shed"):
        return "alert"
    return "model"


def _c21(f):
    if person(f) and has(f, "knife"):
        return "alert"
    if person(f) and Z(f, "pharmacy counter"):
        return "benign" if T(f, "08:00", "20:00") else "alert"
    return "model"


def _c22(f):
    if lab(f, "car") and Z(f, "entry lane") and f["direction"] == "towards":
        return "benign"
    if lab(f, "car") and Z(f, "exit lane") and f["direction"] == "away":
        return "benign"
    if lab(f, "car") and Z(f, "exit lane") and f["direction"] == "towards":
        return "alert"
    return "model"


def _c23(f):
    if person(f) and Z(f, "exclusion zone"):
        return "alert"
    if person(f) and Z(f, "crane base"):
        return "benign" if f["hivis"] else "alert"
    return "model"


def _c24(f):
    if lab(f, "dog", "cat") and Z(f, "henhouse"):
        return "alert"
    if lab(f, "bird"):
        return "benign"
    return "model"


def _c25(f):
    if lab(f, "truck") and Z(f, "roller door"):
        return "benign" if day(f, *WEEKDAYS) and T(f, "06:00", "12:00") else "alert"
    if person(f) and Z(f, "ramp"):
        return "benign"
    return "model"


def _c26(f):
    if lab(f, "car") and Z(f, "staff bays") and T(f, "00:00", "06:00"):
        return "alert"
    if lab(f, "car") and Z(f, "guest bays"):
        return "benign"
    return "model"


def _c27(f):
    if (person(f) and Z(f, "entrance") and f["people"] >= 3 and f["dwell_s"] > 300
            and T(f, "18:00", "06:00")):
        return "alert"
    if person(f) and Z(f, "car drop-off") and T(f, "08:00", "09:00"):
        return "benign"
    return "model"


def _c29(f):
    if person(f) and Z(f, "forklift lane"):
        return "benign" if f["hivis"] else "alert"
    if person(f) and Z(f, "aisle 1", "aisle 2"):
        return "benign"
    return "model"


def _c30(f):
    if person(f) and Z(f, "doorstep") and f["dwell_s"] >= 45 and T(f, "23:00", "06:00"):
        return "alert"
    if person(f) and Z(f, "path") and f["direction"] == "towards":
        return "benign"
    return "model"


def _c31(f):
    if person(f) and Z(f, "exit") and f["direction"] == "away":
        if has(f, "knife"):
            return "alert"
        if has(f, "handbag", "backpack"):
            return "benign"
    return "model"


def _c32(f):
    if person(f) and Z(f, "compound"):
        return "benign" if day(f, *WEEKDAYS) and T(f, "07:00", "18:00") else "alert"
    return "model"


def _c33(f):
    if lab(f, "sheep", "cow") and Z(f, "lane"):
        return "benign"
    if lab(f, "car", "truck") and Z(f, "gate") and f["dwell_s"] > 120:
        return "benign" if T(f, "07:00", "19:00") else "alert"
    return "model"


def _c34(f):
    if person(f) and Z(f, "slipway"):
        if f["upper"] == "orange":
            return "benign"
        if T(f, "20:00", "06:00"):
            return "alert"
    return "model"


def _c35(f):
    if person(f) and Z(f, "exit door") and f["direction"] == "away" and T(f, "23:30", "06:30"):
        return "alert"
    if person(f) and Z(f, "exit door") and f["direction"] == "towards":
        return "benign"
    return "model"


def _c36(f):
    if Z(f, "bike store") and lab(f, "bicycle", "person"):
        return "benign"
    if Z(f, "bike store") and lab(f, "car", "motorcycle", "dog"):
        return "alert"
    return "model"


def _c37(f):
    if person(f) and Z(f, "bins"):
        return "benign" if day(f, "Thu") and T(f, "05:00", "09:00") else "alert"
    return "model"


def _c38(f):
    if person(f) and Z(f, "roof"):
        if f["people"] >= 3 or f["dwell_s"] > 600:
            return "alert"
        return "benign"
    return "model"


def _c40(f):
    if lab(f, "dog") and Z(f, "pitch"):
        return "alert"
    if person(f) and Z(f, "pitch") and T(f, "21:00", "06:00"):
        return "alert"
    if person(f) and Z(f, "pitch") and has(f, "sports ball"):
        return "benign"
    return "model"


def _c41(f):
    if person(f) and Z(f, "cold store door"):
        return "alert" if f["dwell_s"] > 900 else "benign"
    return "model"


def _c42(f):
    if person(f) and Z(f, "gate"):
        if T(f, "06:00", "22:00"):
            return "benign"
        if f["direction"] == "towards":
            return "alert"
        if f["direction"] == "away":
            return "benign"
    return "model"


def _c43(f):
    if person(f) and Z(f, "fire exit"):
        return "benign" if f["hivis"] else "alert"
    if person(f) and Z(f, "corridor"):
        return "benign"
    return "model"


def _c44(f):
    if lab(f, "horse") and Z(f, "stable yard"):
        return "benign"
    if person(f) and Z(f, "tack room") and f["direction"] == "towards":
        return "alert" if day(f, "Sun") else "benign"
    return "model"


def _c45(f):
    if lab(f, "car", "truck", "bus", "motorcycle") and Z(f, "director's space") and T(f, "20:00", "06:00"):
        return "alert"
    if lab(f, "car") and Z(f, "visitor spaces"):
        return "benign"
    if lab(f, "truck") and Z(f, "visitor spaces"):
        return "alert"
    return "model"


def _c46(f):
    if person(f) and Z(f, "pond"):
        return "benign" if T(f, "07:00", "20:00") else "alert"
    if lab(f, "bird") and Z(f, "pond"):
        return "alert"
    return "model"


def _c47(f):
    if not Z(f, "counter"):
        return "model"
    if person(f) and (has(f, "knife") or f["dwell_s"] > 180):
        return "alert"
    return "benign"


def _c48(f):
    if person(f) and Z(f, "scaffold"):
        if T(f, "19:00", "07:00"):
            return "alert"
        return "benign" if f["hivis"] else "alert"
    return "model"


def _c49(f):
    if person(f) and Z(f, "hardstanding") and f["direction"] in ("left", "right"):
        return "benign"
    if (person(f) and Z(f, "shed door") and f["direction"] == "towards"
            and has(f, "backpack", "handbag", "suitcase") and T(f, "21:00", "06:00")):
        return "alert"
    return "model"


def _c50(f):
    if person(f) and Z(f, "hall"):
        return "alert" if f["people"] < 2 else "benign"
    return "model"


def _c52(f):
    if person(f) and Z(f, "helipad"):
        return "benign" if f["hivis"] else "alert"
    if lab(f, "bird") and Z(f, "helipad"):
        return "alert"
    return "model"


def _c53(f):
    if lab(f, "car") and Z(f, "street") and f["direction"] in ("left", "right"):
        return "benign"
    if lab(f, "car", "motorcycle") and Z(f, "driveway") and f["direction"] == "towards":
        return "alert" if T(f, "00:00", "07:00") else "benign"
    return "model"


def _c54(f):
    if person(f) and Z(f, "staff room door") and day(f, *WEEKEND):
        if day(f, "Sat") and T(f, "08:00", "11:00") and f["hivis"]:
            return "benign"
        return "alert"
    return "model"


def _c55(f):
    if person(f) and Z(f, "pay machine"):
        if f["upper"] == "yellow":
            return "benign"
        if f["dwell_s"] > 60:
            return "alert"
    return "model"


def _c56(f):
    if person(f) and Z(f, "mezzanine"):
        return "alert" if f["people"] > 2 else "benign"
    if person(f) and Z(f, "stairs") and has(f, "knife"):
        return "alert"
    return "model"


def _c57(f):
    if lab(f, "car") and Z(f, "garage door") and f["direction"] == "towards":
        return "benign" if T(f, "17:00", "19:00") else "alert"
    if person(f) and Z(f, "workbench") and day(f, *WEEKDAYS) and T(f, "09:00", "17:00"):
        return "alert"
    return "model"


def _c58(f):
    if person(f) and Z(f, "edge"):
        return "alert"
    if person(f) and Z(f, "terrace") and f["dwell_s"] <= 600:
        return "benign"
    return "model"


def _c59(f):
    if person(f) and Z(f, "luggage room"):
        if f["direction"] == "away" and has(f, "suitcase") and T(f, "23:00", "07:00"):
            return "alert"
        if f["direction"] == "towards":
            return "benign"
        if f["direction"] == "away" and not f["carries"]:
            return "benign"
    return "model"


def _c61(f):
    if person(f) and Z(f, "farm shop"):
        return "benign" if T(f, "09:00", "17:30") else "alert"
    if person(f) and Z(f, "orchard") and day(f, *WEEKEND):
        return "alert"
    return "model"


def _c62(f):
    if person(f) and Z(f, "wall") and T(f, "08:00", "20:00"):
        return "benign"
    if person(f) and Z(f, "steps") and T(f, "22:00", "06:00") and f["dwell_s"] > 30:
        return "alert"
    return "model"


def _c63(f):
    if Z(f, "car park") and T(f, "08:00", "22:00"):
        return "benign"
    if lab(f, "car", "truck") and Z(f, "car park"):
        return "alert"
    if person(f) and Z(f, "trolley bay"):
        return "benign"
    return "model"


def _c64(f):
    if person(f) and Z(f, "fence line"):
        return "benign" if f["hivis"] and f["people"] >= 2 else "alert"
    return "model"


def _c65(f):
    if lab(f, "car") and Z(f, "drop-off"):
        return "alert" if f["dwell_s"] > 300 else "benign"
    if lab(f, "bus") and Z(f, "drop-off"):
        return "benign"
    return "model"


def _c66(f):
    if person(f) and Z(f, "gym floor") and T(f, "22:00", "06:00"):
        return "benign" if starts_on(f, "22:00", "06:00", ("Fri",)) else "alert"
    return "model"


def _c67(f):
    if person(f) and Z(f, "compost"):
        if f["upper"] == "green":
            return "benign"
        return "alert" if T(f, "20:00", "07:00") else "benign"
    return "model"


def _c69(f):
    if person(f) and Z(f, "side gate"):
        if f["upper"] == "white" and f["lower"] == "blue":
            return "benign"
        if f["direction"] == "towards" and T(f, "20:00", "08:00"):
            return "alert"
    return "model"


def _c70(f):
    if person(f) and Z(f, "bowser"):
        weekend = ((day(f, "Fri") and T(f, "18:00", "00:00")) or day(f, "Sat", "Sun")
                   or (day(f, "Mon") and T(f, "00:00", "06:00")))
        if weekend:
            return "alert"
        return "benign" if f["hivis"] else "alert"
    return "model"


# ---- the policies --------------------------------------------------------------------------------------
BLIND2 = [
    dict(id="c01", setting="warehouse", camera="dock", zones=["loading dock", "office door"],
         words="Anyone on the loading dock without hi-vis is an alert. People wearing hi-vis there are fine.",
         meaning=U(lambda f: ("benign" if f["hivis"] else "alert")
                   if person(f) and Z(f, "loading dock") else "model"),
         cases=[dict(zones=["loading dock"], hivis=False), dict(zones=["loading dock"], hivis=True),
                dict(zones=["loading dock"], hivis=None), dict(zones=["office door"], hivis=False),
                dict(hivis=False), dict(zones=["loading dock"], label="car"),
                dict(zones=["loading dock", "office door"], hivis=False),
                dict(zones=["loading dock"], hivis=True, time="03:00")],
         note="hi-vis True/False/None on the dock; other zone, no zone, a car, both zones; no verdict given "
              "off the dock -> model"),

    dict(id="c02", setting="home", camera="porch", zones=["porch", "driveway"],
         words="Let me know if someone comes up to the porch between 11pm and 6am. Anything else on this "
               "camera is fine.",
         meaning=U(lambda f: "alert" if person(f) and Z(f, "porch") and f["direction"] == "towards"
                   and T(f, "23:00", "06:00") else "benign"),
         cases=[dict(zones=["porch"], direction="towards", time="23:00"),
                dict(zones=["porch"], direction="towards", time="22:59"),
                dict(zones=["porch"], direction="towards", time="05:59"),
                dict(zones=["porch"], direction="towards", time="06:00"),
                dict(zones=["porch"], direction="away", time="02:00"),
                dict(zones=["driveway"], direction="towards", time="02:00"),
                dict(zones=["porch"], direction="towards", time="02:00", label="dog"),
                dict(zones=["porch"], direction=None, time="02:00")],
         note="window edges 22:59/23:00/05:59/06:00; direction towards vs away vs unknown; a dog; other zone"),

    dict(id="c03", setting="shop", camera="till", zones=["till", "stockroom door"],
         words="Ping me if anyone carrying a knife shows up, any time. Someone at the stockroom door between "
               "half past five in the evening and 8 in the morning is an alert as well. Otherwise let the "
               "model decide.",
         meaning=U(_c03),
         cases=[dict(zones=["till"], carries=["knife"]), dict(carries=["knife", "bottle"]),
                dict(zones=["stockroom door"], time="17:29"), dict(zones=["stockroom door"], time="17:30"),
                dict(zones=["stockroom door"], time="07:59"), dict(zones=["stockroom door"], time="08:00"),
                dict(label="car", carries=["knife"]), dict(zones=["stockroom door"], carries=["backpack"])],
         note="knife anywhere; 17:30-08:00 window edges; a non-person with a knife is not 'anyone'"),

    dict(id="c04", setting="building site", camera="gate", zones=["gate", "site"],
         words="From 7 to 19 anything at the gate is fine. Outside those hours, alert on any person, car or "
               "truck at the gate.",
         meaning=U(_c04),
         cases=[dict(zones=["gate"], time="06:59"), dict(zones=["gate"], time="07:00"),
                dict(zones=["gate"], time="18:59"), dict(zones=["gate"], time="19:00"),
                dict(zones=["gate"], time="23:00", label="truck"), dict(zones=["gate"], time="23:00", label="dog"),
                dict(zones=["site"], time="23:00"), dict(zones=["gate"], time="20:00", label="bus")],
         note="7-19 edges; named labels vs unnamed (dog, bus) after hours -> model; other zone"),

    dict(id="c05", setting="office", camera="reception", zones=["reception", "server room door"],
         words="Nobody should be near the server room door at weekends, so alert on that. On weekdays it's "
               "normal.",
         meaning=U(lambda f: ("alert" if day(f, *WEEKEND) else "benign")
                   if person(f) and Z(f, "server room door") else "model"),
         cases=[dict(zones=["server room door"], weekday="Sat"), dict(zones=["server room door"], weekday="Sun"),
                dict(zones=["server room door"], weekday="Fri"), dict(zones=["server room door"], weekday="Mon"),
                dict(zones=["reception"], weekday="Sat"),
                dict(zones=["server room door"], weekday="Sat", label="dog"),
                dict(zones=["server room door"], weekday="Sun", time="23:59"),
                dict(zones=["server room door"], weekday="Mon", time="00:00")],
         note="weekend vs weekday on either side; calendar day at 23:59 Sun / 00:00 Mon; other zone; a dog"),

    dict(id="c06", setting="school", camera="playground", zones=["playground", "fence"],
         words="Alert if a person lingers by the fence for more than a minute while school is out (before 8am "
               "or after 4pm). During school hours, kids by the fence are fine.",
         meaning=U(_c06),
         cases=[dict(zones=["fence"], time="07:59", dwell_s=61), dict(zones=["fence"], time="08:00", dwell_s=61),
                dict(zones=["fence"], time="15:59", dwell_s=120), dict(zones=["fence"], time="16:00", dwell_s=60),
                dict(zones=["fence"], time="16:00", dwell_s=60.5), dict(zones=["playground"], time="20:00",
                                                                        dwell_s=300),
                dict(zones=["fence"], time="20:00", dwell_s=300, label="dog"),
                dict(zones=["fence"], time="02:00", dwell_s=61)],
         note="school-hours edges 08:00/16:00; dwell exactly 60 vs 60.5; other zone; a dog"),

    dict(id="c07", setting="farm", camera="barn", zones=["barn door", "paddock"],
         words="Horses and cows in the paddock are expected. A dog in the paddock is an alert, and so is any "
               "person at the barn door between 9pm and 5am.",
         meaning=U(_c07),
         cases=[dict(zones=["paddock"], label="horse"), dict(zones=["paddock"], label="cow"),
                dict(zones=["paddock"], label="sheep"), dict(zones=["paddock"], label="dog"),
                dict(zones=["barn door"], label="dog"), dict(zones=["barn door"], time="21:00"),
                dict(zones=["barn door"], time="20:59"), dict(zones=["barn door"], time="04:59"),
                dict(zones=["barn door"], time="05:00")],
         note="named animals vs unnamed sheep; dog in/out of paddock; 21:00-05:00 edges"),

    dict(id="c08", setting="car park", camera="level2", zones=["bays", "ramp"],
         words="Cars, trucks and motorbikes on the ramp are fine. A person standing on the ramp for at least "
               "20 seconds should raise an alert.",
         meaning=U(_c08),
         cases=[dict(zones=["ramp"], label="car"), dict(zones=["ramp"], label="motorcycle"),
                dict(zones=["ramp"], label="bicycle"), dict(zones=["ramp"], dwell_s=20),
                dict(zones=["ramp"], dwell_s=19.9), dict(zones=["bays"], dwell_s=60),
                dict(zones=["ramp"], label="bus")],
         note="'at least 20' -> >= 20 (20 vs 19.9); bicycle and bus not named; other zone"),

    dict(id="c09", setting="hotel", camera="pool", zones=["pool", "deck"],
         words="The pool shuts at 10 pm and opens again at 7 in the morning; anyone in the pool or on the deck "
               "while it's shut is an alert. Guests there during opening hours are fine.",
         meaning=U(lambda f: ("alert" if T(f, "22:00", "07:00") else "benign")
                   if person(f) and Z(f, "pool", "deck") else "model"),
         cases=[dict(zones=["pool"], time="22:00"), dict(zones=["pool"], time="21:59"),
                dict(zones=["deck"], time="06:59"), dict(zones=["deck"], time="07:00"),
                dict(time="23:00"), dict(zones=["pool"], time="23:00", label="dog"),
                dict(zones=["pool", "deck"], time="12:00")],
         note="closing/opening edges; no zone; a dog; both zones by day"),

    dict(id="c10", setting="home", camera="back gate", zones=["back gate"],
         words="Alert on anyone at the back gate between 25:00 and 6am.",
         refuse="impossible time (25:00)"),

    dict(id="c11", setting="hospital", camera="ambulance bay", zones=["ambulance bay", "entrance"],
         words="Cars parked in the ambulance bay for more than five minutes are an alert; trucks and buses "
               "there are fine. People walking into the entrance are fine.",
         meaning=U(_c11),
         cases=[dict(zones=["ambulance bay"], label="car", dwell_s=300),
                dict(zones=["ambulance bay"], label="car", dwell_s=300.5),
                dict(zones=["ambulance bay"], label="truck", dwell_s=1000),
                dict(zones=["ambulance bay"], label="bus"),
                dict(zones=["entrance"], direction="towards"), dict(zones=["entrance"], direction="away"),
                dict(zones=["entrance"], direction=None), dict(zones=["entrance"], label="car", dwell_s=600)],
         note="5 minutes = 300 s exactly vs 300.5; trucks/buses; walking in vs out vs direction unknown"),

    dict(id="c12", setting="marina", camera="pontoon", zones=["pontoon A", "pontoon B", "gangway"],
         words="From midnight to 5am, anyone on pontoon A or pontoon B is an alert unless they're wearing "
               "hi-vis (that's the night patrol).",
         meaning=U(_c12),
         cases=[dict(zones=["pontoon A"], time="00:00"), dict(zones=["pontoon B"], time="04:59"),
                dict(zones=["pontoon A"], time="05:00"), dict(zones=["pontoon A"], time="02:00", hivis=True),
                dict(zones=["pontoon A"], time="02:00", hivis=None), dict(zones=["gangway"], time="02:00"),
                dict(zones=["pontoon A"], time="23:59"), dict(zones=["pontoon A"], time="02:00", label="dog")],
         note="midnight start, 05:00 end; 'unless hi-vis' -> benign; hi-vis unknown -> model; gangway"),

    dict(id="c13", setting="data centre", camera="cage row", zones=["cage 1", "cage 2", "corridor"],
         words="Two or more people in the corridor is normal. Anyone alone in cage 1 or cage 2 is an alert.",
         meaning=U(_c13),
         cases=[dict(zones=["corridor"], people=2), dict(zones=["corridor"], people=1),
                dict(zones=["cage 1"], people=1), dict(zones=["cage 2"], people=1),
                dict(zones=["cage 1"], people=2), dict(zones=["cage 1", "corridor"], people=3),
                dict(zones=["cage 1", "corridor"], people=1), dict(zones=["cage 1"], label="dog")],
         note="people >= 2 vs alone (1); cage with 2 people has no verdict; corridor+cage combinations"),

    dict(id="c14", setting="allotment", camera="shed", zones=["shed", "plots"],
         words="Alert me if somebody leaves the shed carrying a backpack, handbag or suitcase. People walking "
               "away from the shed empty-handed are fine.",
         meaning=U(_c14),
         cases=[dict(zones=["shed"], direction="away", carries=["backpack"]),
                dict(zones=["shed"], direction="away", carries=["suitcase", "bottle"]),
                dict(zones=["shed"], direction="away"),
                dict(zones=["shed"], direction="away", carries=["bottle"]),
                dict(zones=["shed"], direction="towards", carries=["backpack"]),
                dict(zones=["shed"], direction=None, carries=["backpack"]),
                dict(zones=["plots"], direction="away", carries=["backpack"]),
                dict(zones=["shed"], direction=None),
                dict(zones=["shed"], direction="away", label="dog")],
         note="leaving = away; named bags vs a bottle (neither empty-handed nor named) -> model; direction "
              "unknown -> model"),

    dict(id="c15", setting="shop", camera="front door", zones=["doorway", "pavement"],
         words="Shoppers walking past on the pavement are fine, whichever way they go. Alert on anyone in the "
               "doorway between 9pm and 7am.",
         meaning=U(_c15),
         cases=[dict(zones=["pavement"], direction="left"), dict(zones=["pavement"], direction="right",
                                                                 time="23:00"),
                dict(zones=["pavement"], direction="towards"), dict(zones=["doorway"], time="21:00"),
                dict(zones=["doorway"], time="20:59"), dict(zones=["doorway"], time="06:59"),
                dict(zones=["doorway"], time="07:00"), dict(zones=["pavement"], direction="left", label="car")],
         note="walking past = left/right; towards on the pavement has no verdict; 21:00-07:00 edges; a car"),

    dict(id="c16", setting="warehouse", camera="yard", zones=["yard", "fuel tank"],
         words="Ignore trucks in the yard. Any person by the fuel tank is an alert at all hours, hi-vis or not.",
         meaning=U(_c16),
         cases=[dict(zones=["yard"], label="truck"), dict(zones=["yard"], label="car"),
                dict(zones=["fuel tank"], hivis=True), dict(zones=["fuel tank"], hivis=None),
                dict(zones=["yard"]), dict(zones=["fuel tank"], label="truck"),
                dict(zones=["fuel tank"], time="03:00")],
         note="hi-vis unknown still alert (decided either way); car not named; person in yard no verdict"),

    dict(id="c17", setting="office", camera="lobby", zones=["lobby", "lifts"],
         words="Monday to Friday, 8:30 to 18:00, people in the lobby are expected. Outside those times anyone "
               "in the lobby or at the lifts is an alert.",
         meaning=U(_c17),
         cases=[dict(zones=["lobby"], weekday="Mon", time="08:30"), dict(zones=["lobby"], weekday="Mon",
                                                                         time="08:29"),
                dict(zones=["lobby"], weekday="Fri", time="17:59"), dict(zones=["lobby"], weekday="Fri",
                                                                         time="18:00"),
                dict(zones=["lobby"], weekday="Sat", time="12:00"), dict(zones=["lifts"], weekday="Wed"),
                dict(zones=["lifts"], weekday="Sun", time="10:00"),
                dict(zones=["lobby"], weekday="Sat", label="cat")],
         note="08:30/18:00 edges; Friday vs Saturday; lifts in office hours have no verdict; a cat"),

    dict(id="c18", setting="school", camera="bike shed", zones=["bike racks"],
         words="Bicycles are fine here. Alert if a person with a backpack spends over 2 minutes at the racks "
               "on a weekend.",
         meaning=U(_c18),
         cases=[dict(label="bicycle"), dict(zones=["bike racks"], label="bicycle"),
                dict(zones=["bike racks"], carries=["backpack"], dwell_s=121, weekday="Sat"),
                dict(zones=["bike racks"], carries=["backpack"], dwell_s=120, weekday="Sat"),
                dict(zones=["bike racks"], carries=["backpack"], dwell_s=121, weekday="Fri"),
                dict(zones=["bike racks"], carries=["backpack"], dwell_s=121, weekday="Sun"),
                dict(zones=["bike racks"], dwell_s=200, weekday="Sun"),
                dict(zones=["bike racks"], carries=["handbag"], dwell_s=200, weekday="Sun"),
                dict(zones=["bike racks"], label="motorcycle")],
         note="over 2 min = > 120; Fri vs Sat/Sun; backpack vs handbag/none; bicycles anywhere on camera"),

    dict(id="c19", setting="shop", camera="till", zones=["till"],
         words="Alert if anyone stays at the till for less than 10 seconds and for more than a minute.",
         refuse="condition can never hold (dwell < 10 and > 60)"),

    dict(id="c20", setting="home", camera="garden", zones=["lawn", "patio", "shed"],
         words="The cat and the dog are always fine in the garden. If a person's on the lawn or the patio "
               "between midnight and half past five, alert me. The shed's off limits at all hours: anyone "
               "there is an alert.",
         meaning=U(_c20),
         cases=[dict(zones=["lawn"], label="dog"), dict(zones=["shed"], label="cat"),
                dict(zones=["lawn"], time="00:00"), dict(zones=["lawn"], time="05:29"),
                dict(zones=["patio"], time="05:30"), dict(zones=["patio"], time="23:59"),
                dict(zones=["shed"], time="14:00"), dict(zones=["lawn"], label="bird")],
         note="midnight/05:30 edges; shed at any hour; pets benign even in the shed; a bird has no verdict"),

    dict(id="c21", setting="hospital", camera="pharmacy", zones=["pharmacy counter", "corridor"],
         words="Anyone with a knife is an alert. Apart from that, people at the pharmacy counter are fine from "
               "8am to 8pm; outside those hours, anyone at the counter is an alert.",
         meaning=U(_c21),
         cases=[dict(zones=["corridor"], carries=["knife"]),
                dict(zones=["pharmacy counter"], carries=["knife"]),
                dict(zones=["pharmacy counter"], time="08:00"), dict(zones=["pharmacy counter"], time="07:59"),
                dict(zones=["pharmacy counter"], time="19:59"), dict(zones=["pharmacy counter"], time="20:00"),
                dict(zones=["corridor"], time="23:00"), dict(zones=["pharmacy counter"], time="23:00",
                                                             label="cat")],
         note="knife beats the daytime benign; 08:00/20:00 edges; corridor without knife; a cat"),

    dict(id="c22", setting="car park", camera="barrier", zones=["entry lane", "exit lane"],
         words="Cars arriving through the entry lane and cars leaving through the exit lane are both fine. A "
               "car coming in through the exit lane is an alert.",
         meaning=U(_c22),
         cases=[dict(zones=["entry lane"], label="car", direction="towards"),
                dict(zones=["exit lane"], label="car", direction="away"),
                dict(zones=["exit lane"], label="car", direction="towards"),
                dict(zones=["entry lane"], label="car", direction="away"),
                dict(zones=["exit lane"], label="car", direction=None),
                dict(zones=["exit lane"], label="truck", direction="towards"),
                dict(zones=["exit lane"], label="car", direction="left"),
                dict(zones=["entry lane"], label="car", direction=None)],
         note="arriving = towards, leaving = away; wrong-way car; direction unknown -> model; truck not named"),

    dict(id="c23", setting="building site", camera="crane", zones=["crane base", "exclusion zone"],
         words="Nobody's allowed in the exclusion zone, ever, hi-vis or not. At the crane base, workers in "
               "hi-vis are fine; anyone without hi-vis there gets an alert.",
         meaning=U(_c23),
         cases=[dict(zones=["exclusion zone"], hivis=True), dict(zones=["exclusion zone"], hivis=None),
                dict(zones=["crane base"], hivis=True), dict(zones=["crane base"], hivis=False),
                dict(zones=["crane base"], hivis=None), dict(zones=["crane base", "exclusion zone"], hivis=True),
                dict(zones=["exclusion zone"], label="truck"), dict(hivis=False)],
         note="exclusion zone regardless of hi-vis (unknown still alert); crane base hi-vis T/F/None; both"),

    dict(id="c24", setting="farm", camera="henhouse", zones=["henhouse", "yard"],
         words="Alert on any dog or cat near the henhouse. Birds are fine anywhere.",
         meaning=U(_c24),
         cases=[dict(zones=["henhouse"], label="dog"), dict(zones=["henhouse"], label="cat"),
                dict(zones=["yard"], label="dog"), dict(zones=["henhouse"], label="bird"),
                dict(label="bird"), dict(zones=["henhouse"]), dict(zones=["henhouse"], label="horse")],
         note="animals in/out of the zone; birds with no zone; a person and a horse have no verdict"),

    dict(id="c25", setting="data centre", camera="loading bay", zones=["roller door", "ramp"],
         words="Deliveries come on weekday mornings only, 6 till noon, and trucks at the roller door then are "
               "fine. A truck at the roller door any other time is an alert. People on the ramp are fine.",
         meaning=U(_c25),
         cases=[dict(zones=["roller door"], label="truck", weekday="Mon", time="06:00"),
                dict(zones=["roller door"], label="truck", weekday="Mon", time="05:59"),
                dict(zones=["roller door"], label="truck", weekday="Fri", time="11:59"),
                dict(zones=["roller door"], label="truck", weekday="Fri", time="12:00"),
                dict(zones=["roller door"], label="truck", weekday="Sat", time="08:00"),
                dict(zones=["roller door"], label="car", weekday="Mon", time="08:00"),
                dict(zones=["ramp"], weekday="Sun", time="03:00"), dict(zones=["roller door"])],
         note="06:00/noon edges; Fri vs Sat; cars not named; a person at the roller door has no verdict"),

    dict(id="c26", setting="hotel", camera="car park", zones=["guest bays", "staff bays"],
         words="Any car in the staff bays between midnight and 6 is an alert. Cars in the guest bays are fine "
               "at any hour.",
         meaning=U(_c26),
         cases=[dict(zones=["staff bays"], label="car", time="00:00"),
                dict(zones=["staff bays"], label="car", time="05:59"),
                dict(zones=["staff bays"], label="car", time="06:00"),
                dict(zones=["staff bays"], label="car", time="23:59"),
                dict(zones=["guest bays"], label="car", time="03:00"),
                dict(zones=["staff bays"], label="truck", time="03:00"),
                dict(zones=["staff bays"], time="03:00"),
                dict(zones=["staff bays", "guest bays"], label="car", time="03:00")],
         note="midnight start, 06:00 end, 23:59 outside; truck/person not named; both zones -> first rule"),

    dict(id="c27", setting="school", camera="main entrance", zones=["entrance", "car drop-off"],
         words="A group of three or more people hanging about the entrance for more than 5 minutes after 6pm "
               "should raise an alert. Kids in the car drop-off between 8 and 9 in the morning are expected.",
         meaning=U(_c27),
         cases=[dict(zones=["entrance"], people=3, dwell_s=301, time="18:00"),
                dict(zones=["entrance"], people=3, dwell_s=301, time="17:59"),
                dict(zones=["entrance"], people=2, dwell_s=301, time="19:00"),
                dict(zones=["entrance"], people=3, dwell_s=300, time="19:00"),
                dict(zones=["entrance"], people=3, dwell_s=301, time="05:59"),
                dict(zones=["entrance"], people=3, dwell_s=301, time="06:00"),
                dict(zones=["car drop-off"], time="08:00"), dict(zones=["car drop-off"], time="09:00"),
                dict(zones=["car drop-off"], time="07:59")],
         note="'after 6pm' runs 18:00-06:00 (convention 5); people >= 3; dwell > 300; 08:00-09:00 edges"),

    dict(id="c28", setting="home", camera="drive", zones=["drive"],
         words="Alert on every car in the drive. Cars in the drive are fine.",
         refuse="two sentences contradict (cars in the drive alert vs benign) with no exception word"),

    dict(id="c29", setting="warehouse", camera="racking", zones=["aisle 1", "aisle 2", "forklift lane"],
         words="People in the forklift lane without hi-vis are an alert; with hi-vis they're fine. In the "
               "aisles hi-vis isn't needed, so people there are fine either way.",
         meaning=U(_c29),
         cases=[dict(zones=["forklift lane"], hivis=False), dict(zones=["forklift lane"], hivis=True),
                dict(zones=["forklift lane"], hivis=None), dict(zones=["aisle 1"], hivis=False),
                dict(zones=["aisle 2"], hivis=None), dict(hivis=False),
                dict(zones=["forklift lane"], label="truck")],
         note="hi-vis T/F/None in the lane; aisles benign whatever hi-vis is (None decided); truck not named"),

    dict(id="c30", setting="home", camera="front door", zones=["doorstep", "path"],
         words="If somebody stands on the doorstep for 45 seconds or longer after 11 at night, alert. Anyone "
               "just walking up the path towards the door is fine.",
         meaning=U(_c30),
         cases=[dict(zones=["doorstep"], dwell_s=45, time="23:00"),
                dict(zones=["doorstep"], dwell_s=44.9, time="23:00"),
                dict(zones=["doorstep"], dwell_s=45, time="22:59"),
                dict(zones=["doorstep"], dwell_s=45, time="05:59"),
                dict(zones=["doorstep"], dwell_s=45, time="06:00"),
                dict(zones=["path"], direction="towards"), dict(zones=["path"], direction="away"),
                dict(zones=["path"], direction=None), dict(zones=["doorstep"], dwell_s=60, time="23:30",
                                                           label="dog")],
         note="'after 11 at night' = 23:00-06:00; >= 45; walking up = towards; unknown direction -> model"),

    dict(id="c31", setting="shop", camera="aisle", zones=["aisle", "exit"],
         words="A person heading out through the exit with a handbag or a backpack isn't a concern. Anyone "
               "leaving through the exit with a knife is.",
         meaning=U(_c31),
         cases=[dict(zones=["exit"], direction="away", carries=["handbag"]),
                dict(zones=["exit"], direction="away", carries=["backpack"]),
                dict(zones=["exit"], direction="away", carries=["knife"]),
                dict(zones=["exit"], direction="towards", carries=["knife"]),
                dict(zones=["exit"], direction="away"),
                dict(zones=["aisle"], direction="away", carries=["knife"]),
                dict(zones=["exit"], direction=None, carries=["knife"]),
                dict(zones=["exit"], direction="away", carries=["umbrella"])],
         note="'isn't a concern' -> benign, 'is [a concern]' -> alert; leaving = away; unnamed objects"),

    dict(id="c32", setting="building site", camera="stores", zones=["container", "compound"],
         words="Working hours are 7 to 6, Monday to Friday. Outside working hours anyone in the compound is "
               "an alert; during them, they're fine.",
         meaning=U(_c32),
         cases=[dict(zones=["compound"], weekday="Mon", time="07:00"),
                dict(zones=["compound"], weekday="Mon", time="06:59"),
                dict(zones=["compound"], weekday="Fri", time="17:59"),
                dict(zones=["compound"], weekday="Fri", time="18:00"),
                dict(zones=["compound"], weekday="Sat", time="10:00"),
                dict(zones=["container"], weekday="Sat", time="10:00"),
                dict(zones=["compound"], weekday="Sat", label="dog"),
                dict(zones=["compound"], weekday="Mon", time="02:00")],
         note="'7 to 6' = 07:00-18:00; weekday vs weekend; container has no verdict; a dog"),

    dict(id="c33", setting="farm", camera="lane", zones=["lane", "gate"],
         words="Sheep and cows on the lane are fine. A car or truck stopping at the gate for more than 2 "
               "minutes is an alert, unless it's between 7am and 7pm.",
         meaning=U(_c33),
         cases=[dict(zones=["gate"], label="car", dwell_s=121, time="19:00"),
                dict(zones=["gate"], label="car", dwell_s=121, time="18:59"),
                dict(zones=["gate"], label="car", dwell_s=121, time="06:59"),
                dict(zones=["gate"], label="car", dwell_s=121, time="07:00"),
                dict(zones=["gate"], label="car", dwell_s=120, time="22:00"),
                dict(zones=["gate"], label="truck", dwell_s=200, time="03:00"),
                dict(zones=["lane"], label="sheep"), dict(zones=["gate"], label="cow"),
                dict(zones=["gate"], dwell_s=200, time="22:00")],
         note="'unless' excepted cases -> benign; 07:00/19:00 edges; > 120 s; animals on lane vs gate"),

    dict(id="c34", setting="marina", camera="fuel dock", zones=["fuel dock", "slipway"],
         words="Anyone on the slipway in an orange top is harbour crew and that's fine. Anyone else on the "
               "slipway after 8pm gets an alert.",
         meaning=U(_c34),
         cases=[dict(zones=["slipway"], upper="orange", time="21:00"),
                dict(zones=["slipway"], upper="red", time="21:00"),
                dict(zones=["slipway"], upper=None, time="21:00"),
                dict(zones=["slipway"], upper="red", time="19:59"),
                dict(zones=["slipway"], upper="red", time="20:00"),
                dict(zones=["slipway"], upper="blue", time="05:59"),
                dict(zones=["slipway"], upper="blue", time="06:00"),
                dict(zones=["fuel dock"], upper="red", time="21:00"),
                dict(zones=["slipway"], upper="orange", time="12:00")],
         note="upper colour known/unknown; 'after 8pm' = 20:00-06:00; daytime non-orange has no verdict"),

    dict(id="c35", setting="hospital", camera="ward corridor", zones=["corridor", "exit door"],
         words="Between half past eleven at night and half past six in the morning, anyone going out through "
               "the exit door is an alert. People coming in that way are fine.",
         meaning=U(_c35),
         cases=[dict(zones=["exit door"], direction="away", time="23:30"),
                dict(zones=["exit door"], direction="away", time="23:29"),
                dict(zones=["exit door"], direction="away", time="06:29"),
                dict(zones=["exit door"], direction="away", time="06:30"),
                dict(zones=["exit door"], direction="towards", time="02:00"),
                dict(zones=["exit door"], direction="towards", time="12:00"),
                dict(zones=["exit door"], direction=None, time="02:00"),
                dict(zones=["corridor"], direction="away", time="02:00"),
                dict(zones=["exit door"], direction="left", time="02:00")],
         note="half-past edges 23:30/06:30; going out = away, coming in = towards; unknown/left direction"),

    dict(id="c36", setting="office", camera="bike store", zones=["bike store"],
         words="Bicycles and people in the bike store are fine. Cars, motorbikes and dogs in there are an "
               "alert.",
         meaning=U(_c36),
         cases=[dict(zones=["bike store"], label="bicycle"), dict(zones=["bike store"]),
                dict(zones=["bike store"], label="car"), dict(zones=["bike store"], label="motorcycle"),
                dict(zones=["bike store"], label="dog"), dict(zones=["bike store"], label="cat"),
                dict(label="bicycle"), dict(zones=["bike store"], time="03:00")],
         note="each named label; a cat is neither listed -> model; outside the zone -> model"),

    dict(id="c37", setting="home", camera="side passage", zones=["passage", "bins"],
         words="Bin collection is Thursday morning, 5 till 9, so people at the bins then are fine. Anyone at "
               "the bins at any other time is an alert.",
         meaning=U(_c37),
         cases=[dict(zones=["bins"], weekday="Thu", time="05:00"),
                dict(zones=["bins"], weekday="Thu", time="04:59"),
                dict(zones=["bins"], weekday="Thu", time="08:59"),
                dict(zones=["bins"], weekday="Thu", time="09:00"),
                dict(zones=["bins"], weekday="Wed", time="06:00"),
                dict(zones=["bins"], weekday="Fri", time="06:00"),
                dict(zones=["passage"], weekday="Thu", time="06:00"),
                dict(zones=["bins"], weekday="Thu", label="cat")],
         note="day + window; days either side; other zone; a cat"),

    dict(id="c38", setting="car park", camera="multi-storey roof", zones=["roof", "stairwell"],
         words="Three or more people on the roof is an alert. One or two people up there are fine unless they "
               "hang around for over ten minutes, then alert as well.",
         meaning=U(_c38),
         cases=[dict(zones=["roof"], people=3), dict(zones=["roof"], people=2, dwell_s=600),
                dict(zones=["roof"], people=2, dwell_s=600.1), dict(zones=["roof"], people=1),
                dict(zones=["stairwell"], people=3), dict(zones=["roof"], label="car"),
                dict(zones=["stairwell"], people=2, dwell_s=601)],
         note="people >= 3; > 600 s; other zone; a car"),

    dict(id="c39", setting="shop", camera="stockroom", zones=["stockroom"],
         words="Alert on anybody in the stockroom between 13am and 5am.",
         refuse="impossible time (13am)"),

    dict(id="c40", setting="school", camera="sports field", zones=["pitch", "pavilion"],
         words="Kids with a ball on the pitch are fine till 9pm. Anybody on the pitch after that, until 6 in "
               "the morning, is an alert, and a dog on the pitch is an alert at any hour.",
         meaning=U(_c40),
         cases=[dict(zones=["pitch"], carries=["sports ball"], time="20:59"),
                dict(zones=["pitch"], carries=["sports ball"], time="21:00"),
                dict(zones=["pitch"], time="21:00"),
                dict(zones=["pitch"], carries=["sports ball"], time="05:59"),
                dict(zones=["pitch"], carries=["sports ball"], time="06:00"),
                dict(zones=["pitch"], time="12:00"), dict(zones=["pitch"], label="dog"),
                dict(zones=["pavilion"], label="dog"), dict(zones=["pavilion"], carries=["sports ball"],
                                                            time="22:00")],
         note="ball = sports ball; 21:00/06:00 edges; no ball by day has no verdict; dog anywhere on pitch"),

    dict(id="c41", setting="warehouse", camera="cold store", zones=["cold store door"],
         words="Nobody should spend longer than 15 minutes at the cold store door. Anyone there for up to 15 "
               "minutes is fine.",
         meaning=U(_c41),
         cases=[dict(zones=["cold store door"], dwell_s=900), dict(zones=["cold store door"], dwell_s=900.1),
                dict(zones=["cold store door"]), dict(zones=["cold store door"], dwell_s=3600, time="03:00"),
                dict(dwell_s=1000), dict(zones=["cold store door"], label="cat", dwell_s=1000),
                dict(zones=["cold store door"], label="truck", dwell_s=1000),
                dict(zones=["cold store door"], hivis=True, dwell_s=1000)],
         note="15 min = 900 s; 'up to' includes 900; non-persons not covered"),

    dict(id="c42", setting="allotment", camera="gate", zones=["gate", "path"],
         words="People at the gate between 6am and 10pm are fine. From 10pm to 6am, alert if someone comes in "
               "through the gate; anyone going out then is fine.",
         meaning=U(_c42),
         cases=[dict(zones=["gate"], direction="towards", time="22:00"),
                dict(zones=["gate"], direction="towards", time="21:59"),
                dict(zones=["gate"], direction="towards", time="05:59"),
                dict(zones=["gate"], direction="towards", time="06:00"),
                dict(zones=["gate"], direction="away", time="23:00"),
                dict(zones=["gate"], direction=None, time="23:00"),
                dict(zones=["gate"], direction=None, time="12:00"),
                dict(zones=["path"], direction="towards", time="23:00"),
                dict(zones=["gate"], direction="towards", time="23:00", label="dog")],
         note="06:00/22:00 edges; comes in = towards; by day direction does not matter (None decided)"),

    dict(id="c43", setting="hotel", camera="corridor 3", zones=["corridor", "fire exit"],
         words="Anybody using the fire exit is an alert, unless they're in hi-vis. Guests in the corridor are "
               "fine.",
         meaning=U(_c43),
         cases=[dict(zones=["fire exit"], hivis=False), dict(zones=["fire exit"], hivis=True),
                dict(zones=["fire exit"], hivis=None), dict(zones=["corridor"], hivis=False),
                dict(zones=["corridor"], hivis=None), dict(zones=["corridor", "fire exit"], hivis=False),
                dict(zones=["corridor", "fire exit"], hivis=None), dict(zones=["fire exit"], label="cat")],
         note="'unless hi-vis' -> benign; None -> model at the fire exit but benign in the corridor alone"),

    dict(id="c44", setting="farm", camera="stables", zones=["stable yard", "tack room"],
         words="Horses in the stable yard are normal. Anyone going into the tack room on a Sunday is an "
               "alert; the rest of the week that's fine.",
         meaning=U(_c44),
         cases=[dict(zones=["stable yard"], label="horse"), dict(zones=["tack room"], label="horse"),
                dict(zones=["tack room"], direction="towards", weekday="Sun"),
                dict(zones=["tack room"], direction="towards", weekday="Sat"),
                dict(zones=["tack room"], direction="towards", weekday="Mon"),
                dict(zones=["tack room"], direction="away", weekday="Sun"),
                dict(zones=["tack room"], direction=None, weekday="Sun"),
                dict(zones=["tack room"], direction="towards", weekday="Sun", time="23:59"),
                dict(zones=["tack room"], direction="towards", weekday="Mon", time="00:00")],
         note="going into = towards; Sunday vs either side; calendar-day boundary at midnight"),

    dict(id="c45", setting="office", camera="car park", zones=["visitor spaces", "director's space"],
         words="Any vehicle in the director's space overnight, 8pm to 6am, is an alert. In the visitor spaces "
               "cars are fine, but trucks there get an alert.",
         meaning=U(_c45),
         cases=[dict(zones=["director's space"], label="car", time="20:00"),
                dict(zones=["director's space"], label="car", time="19:59"),
                dict(zones=["director's space"], label="truck", time="05:59"),
                dict(zones=["director's space"], label="car", time="06:00"),
                dict(zones=["visitor spaces"], label="car"), dict(zones=["visitor spaces"], label="truck"),
                dict(zones=["director's space"], time="22:00"), dict(zones=["visitor spaces"], label="bus"),
                dict(zones=["director's space"], label="motorcycle", time="23:00")],
         note="20:00/06:00 edges; 'vehicle' = car, truck, bus, motorcycle; person not a vehicle; bus unnamed "
              "for visitor spaces"),

    dict(id="c46", setting="home", camera="back garden", zones=["garden", "pond"],
         words="People by the pond between 7am and 8pm are fine; at any other hour a person at the pond is an "
               "alert. Birds at the pond should always alert me, herons eat the fish.",
         meaning=U(_c46),
         cases=[dict(zones=["pond"], time="07:00"), dict(zones=["pond"], time="06:59"),
                dict(zones=["pond"], time="19:59"), dict(zones=["pond"], time="20:00"),
                dict(zones=["pond"], label="bird"), dict(zones=["garden"], label="bird"),
                dict(zones=["pond"], label="cat"), dict(zones=["garden"], time="22:00")],
         note="07:00/20:00 edges; birds only at the pond; cat and garden person have no verdict"),

    dict(id="c47", setting="shop", camera="jewellery counter", zones=["counter"],
         words="Alert if anyone at the counter has a knife, or if someone's at the counter for over 3 "
               "minutes. Otherwise everything at the counter is fine.",
         meaning=U(_c47),
         cases=[dict(zones=["counter"], carries=["knife"]), dict(zones=["counter"], dwell_s=180),
                dict(zones=["counter"], dwell_s=180.5), dict(zones=["counter"], carries=["bottle"], dwell_s=200),
                dict(zones=["counter"], label="cat", dwell_s=300), dict(carries=["knife"]),
                dict(zones=["counter"], carries=["cell phone"], dwell_s=10)],
         note="> 180; 'everything at the counter' covers non-persons (cat -> benign); no zone -> model"),

    dict(id="c48", setting="building site", camera="scaffold", zones=["scaffold", "ground"],
         words="After hours (7pm to 7am) nobody belongs on the scaffold: alert. Anyone on the scaffold in "
               "working hours without hi-vis is also an alert; with hi-vis they're fine.",
         meaning=U(_c48),
         cases=[dict(zones=["scaffold"], time="19:00", hivis=True),
                dict(zones=["scaffold"], time="18:59", hivis=True),
                dict(zones=["scaffold"], time="18:59", hivis=False),
                dict(zones=["scaffold"], time="06:59", hivis=True),
                dict(zones=["scaffold"], time="07:00", hivis=None),
                dict(zones=["scaffold"], time="23:00", hivis=None),
                dict(zones=["ground"], hivis=False), dict(zones=["scaffold"], label="bird")],
         note="19:00/07:00 edges; hi-vis None decided at night (alert) but not by day (model)"),

    dict(id="c49", setting="marina", camera="boat shed", zones=["shed door", "hardstanding"],
         words="Ignore anyone walking past the boat shed on the hardstanding. Somebody coming towards the shed "
               "door with a bag (backpack, handbag or suitcase) between 9 in the evening and 6 in the "
               "morning is worth an alert.",
         meaning=U(_c49),
         cases=[dict(zones=["hardstanding"], direction="left"),
                dict(zones=["hardstanding"], direction="right", time="02:00"),
                dict(zones=["hardstanding"], direction="towards"),
                dict(zones=["shed door"], direction="towards", carries=["backpack"], time="21:00"),
                dict(zones=["shed door"], direction="towards", carries=["backpack"], time="20:59"),
                dict(zones=["shed door"], direction="towards", carries=["suitcase"], time="05:59"),
                dict(zones=["shed door"], direction="towards", carries=["suitcase"], time="06:00"),
                dict(zones=["shed door"], direction="towards", time="23:00"),
                dict(zones=["shed door"], direction=None, carries=["backpack"], time="23:00")],
         note="walking past = left/right; 21:00/06:00 edges; without a bag -> model; direction unknown"),

    dict(id="c50", setting="data centre", camera="server hall", zones=["hall", "rack row 4"],
         words="People in the hall work in pairs: someone on their own in the hall is an alert. Two or more "
               "people are fine.",
         meaning=U(_c50),
         cases=[dict(zones=["hall"], people=1), dict(zones=["hall"], people=2), dict(zones=["hall"], people=5),
                dict(zones=["rack row 4"], people=1), dict(zones=["hall", "rack row 4"], people=1),
                dict(zones=["hall"], label="dog"), dict(zones=["hall"], people=1, time="03:00")],
         note="alone = people 1; >= 2; rack row alone has no verdict; a dog"),

    dict(id="c51", setting="hotel", camera="lobby", zones=["lobby"],
         words="Anyone in the lobby after 10pm is an alert. People in the lobby at night are fine.",
         refuse="two sentences contradict (lobby 22:00-06:00 alert vs benign) with no exception word"),

    dict(id="c52", setting="hospital", camera="helipad", zones=["helipad", "access stairs"],
         words="No one on the helipad unless they're in hi-vis; anyone else up there is an alert. Birds "
               "landing on the pad are an alert too.",
         meaning=U(_c52),
         cases=[dict(zones=["helipad"], hivis=False), dict(zones=["helipad"], hivis=True),
                dict(zones=["helipad"], hivis=None), dict(zones=["access stairs"], hivis=False),
                dict(zones=["helipad"], label="bird"), dict(zones=["access stairs"], label="bird"),
                dict(zones=["helipad"], hivis=True, time="03:00"), dict(zones=["helipad"], label="cat")],
         note="hi-vis T/F/None; birds only on the pad; a cat; stairs have no verdict"),

    dict(id="c53", setting="home", camera="driveway", zones=["driveway", "street"],
         words="Cars going by in the street are fine. A car or motorbike coming up the driveway between "
               "midnight and 7am is an alert; the rest of the day that's fine.",
         meaning=U(_c53),
         cases=[dict(zones=["street"], label="car", direction="left"),
                dict(zones=["street"], label="car", direction="towards"),
                dict(zones=["driveway"], label="car", direction="towards", time="00:00"),
                dict(zones=["driveway"], label="car", direction="towards", time="06:59"),
                dict(zones=["driveway"], label="car", direction="towards", time="07:00"),
                dict(zones=["driveway"], label="car", direction="towards", time="23:59"),
                dict(zones=["driveway"], label="motorcycle", direction="towards", time="03:00"),
                dict(zones=["driveway"], label="truck", direction="towards", time="03:00"),
                dict(zones=["driveway"], label="car", direction="away", time="03:00"),
                dict(zones=["driveway"], label="car", direction=None, time="03:00")],
         note="going by = left/right; coming up = towards; midnight/07:00 edges; truck unnamed; unknown dir"),

    dict(id="c54", setting="school", camera="staff room", zones=["staff room door"],
         words="Anyone at the staff room door at the weekend is an alert, apart from the cleaner, who comes "
               "Saturday mornings between 8 and 11 and always wears hi-vis.",
         meaning=U(_c54),
         cases=[dict(zones=["staff room door"], weekday="Sat", time="08:00", hivis=True),
                dict(zones=["staff room door"], weekday="Sat", time="10:59", hivis=True),
                dict(zones=["staff room door"], weekday="Sat", time="11:00", hivis=True),
                dict(zones=["staff room door"], weekday="Sat", time="07:59", hivis=True),
                dict(zones=["staff room door"], weekday="Sat", time="09:00", hivis=False),
                dict(zones=["staff room door"], weekday="Sat", time="09:00", hivis=None),
                dict(zones=["staff room door"], weekday="Sun", time="09:00", hivis=True),
                dict(zones=["staff room door"], weekday="Fri", time="09:00"),
                dict(zones=["staff room door"], weekday="Sun", time="09:00", hivis=None)],
         note="exception = Sat 08:00-11:00 AND hi-vis -> benign; hi-vis unknown decided only outside it; "
              "Friday has no verdict"),

    dict(id="c55", setting="car park", camera="pay machine", zones=["pay machine", "footpath"],
         words="The attendants wear yellow tops, so a person at the pay machine in a yellow top is fine. "
               "Anyone else at the pay machine for more than a minute is an alert.",
         meaning=U(_c55),
         cases=[dict(zones=["pay machine"], upper="yellow", dwell_s=200),
                dict(zones=["pay machine"], upper="red", dwell_s=61),
                dict(zones=["pay machine"], upper="red", dwell_s=60),
                dict(zones=["pay machine"], upper=None, dwell_s=61),
                dict(zones=["pay machine"], upper=None, dwell_s=30),
                dict(zones=["footpath"], upper="red", dwell_s=200),
                dict(zones=["pay machine"], label="car", dwell_s=200),
                dict(zones=["pay machine"], upper="yellow")],
         note="upper colour known/unknown; > 60; short non-yellow stay has no verdict"),

    dict(id="c56", setting="warehouse", camera="mezzanine", zones=["mezzanine", "stairs"],
         words="Only two people are allowed on the mezzanine at once; more than two is an alert. Anyone with "
               "a knife on the stairs gets an alert too.",
         meaning=U(_c56),
         cases=[dict(zones=["mezzanine"], people=2), dict(zones=["mezzanine"], people=3),
                dict(zones=["mezzanine"], people=1), dict(zones=["stairs"], carries=["knife"]),
                dict(zones=["stairs"]), dict(zones=["mezzanine"], people=1, carries=["knife"]),
                dict(zones=["stairs", "mezzanine"], people=3), dict(zones=["mezzanine"], people=3, label="dog")],
         note="people > 2 vs up to two allowed (benign); knife only on the stairs"),

    dict(id="c57", setting="home", camera="garage", zones=["garage door", "workbench"],
         words="A car arriving at the garage door between 5 and 7 in the evening is me coming home, that's "
               "fine. A car arriving there at any other time is an alert, as is anyone at the workbench "
               "Monday to Friday from 9 to 5 while nobody's home.",
         meaning=U(_c57),
         cases=[dict(zones=["garage door"], label="car", direction="towards", time="17:00"),
                dict(zones=["garage door"], label="car", direction="towards", time="16:59"),
                dict(zones=["garage door"], label="car", direction="towards", time="18:59"),
                dict(zones=["garage door"], label="car", direction="towards", time="19:00"),
                dict(zones=["garage door"], label="car", direction="away", time="18:00"),
                dict(zones=["garage door"], label="car", direction=None, time="12:00"),
                dict(zones=["workbench"], weekday="Mon", time="09:00"),
                dict(zones=["workbench"], weekday="Fri", time="16:59"),
                dict(zones=["workbench"], weekday="Fri", time="17:00"),
                dict(zones=["workbench"], weekday="Sat", time="12:00")],
         note="arriving = towards; 17:00/19:00 edges; weekday 09:00-17:00 edges; Saturday"),

    dict(id="c58", setting="office", camera="roof terrace", zones=["terrace", "edge"],
         words="Smokers on the terrace are fine for up to 10 minutes. Alert if anyone goes near the edge, at "
               "any time of day.",
         meaning=U(_c58),
         cases=[dict(zones=["terrace"], dwell_s=600), dict(zones=["terrace"], dwell_s=600.1),
                dict(zones=["edge"]), dict(zones=["edge"], time="03:00"), dict(zones=["terrace"]),
                dict(zones=["edge"], label="bird"), dict()],
         note="up to 600 s inclusive; longer has no verdict; edge any time; a bird"),

    dict(id="c59", setting="hotel", camera="luggage room", zones=["luggage room"],
         words="Anyone leaving the luggage room with a suitcase outside reception hours, that's before 7 or "
               "after 23:00, is an alert. Anyone coming in, or leaving empty-handed, is fine.",
         meaning=U(_c59),
         cases=[dict(zones=["luggage room"], direction="away", carries=["suitcase"], time="23:00"),
                dict(zones=["luggage room"], direction="away", carries=["suitcase"], time="22:59"),
                dict(zones=["luggage room"], direction="away", carries=["suitcase"], time="06:59"),
                dict(zones=["luggage room"], direction="away", carries=["suitcase"], time="07:00"),
                dict(zones=["luggage room"], direction="towards", carries=["suitcase"], time="23:30"),
                dict(zones=["luggage room"], direction="away", time="23:30"),
                dict(zones=["luggage room"], direction="away", carries=["handbag"], time="23:30"),
                dict(zones=["luggage room"], direction=None, carries=["suitcase"], time="23:30"),
                dict(zones=["luggage room"], direction=None, time="23:30")],
         note="23:00-07:00 edges; leaving = away, coming in = towards; handbag/left/right have no verdict"),

    dict(id="c60", setting="home", camera="back garden", zones=["garden"],
         words="Alert on anyone in the back garden after dark.",
         refuse="'after dark' is not a time the facts can decide (not one of the documented day parts)"),

    dict(id="c61", setting="farm", camera="orchard", zones=["orchard", "farm shop"],
         words="Customers in the farm shop from 9 to 5:30 are fine, every day. Anyone in the orchard on a "
               "Saturday or Sunday is an alert, and so is anyone in the shop outside opening hours.",
         meaning=U(_c61),
         cases=[dict(zones=["farm shop"], time="09:00"), dict(zones=["farm shop"], time="08:59"),
                dict(zones=["farm shop"], time="17:29"), dict(zones=["farm shop"], time="17:30"),
                dict(zones=["orchard"], weekday="Sat"), dict(zones=["orchard"], weekday="Sun", time="23:59"),
                dict(zones=["orchard"], weekday="Mon", time="00:00"), dict(zones=["orchard"], weekday="Fri"),
                dict(zones=["orchard"], weekday="Sat", label="sheep")],
         note="'5:30' = 17:30; shop edges; orchard weekend vs Fri/Mon; sheep unnamed"),

    dict(id="c62", setting="marina", camera="harbour wall", zones=["wall", "steps"],
         words="Anyone on the harbour wall between 8am and 8pm is fine. Between 10 at night and 6 in the "
               "morning, someone on the steps for more than 30 seconds is an alert.",
         meaning=U(_c62),
         cases=[dict(zones=["wall"], time="08:00"), dict(zones=["wall"], time="07:59"),
                dict(zones=["wall"], time="19:59"), dict(zones=["wall"], time="20:00"),
                dict(zones=["steps"], time="22:00", dwell_s=30.1), dict(zones=["steps"], time="22:00", dwell_s=30),
                dict(zones=["steps"], time="21:59", dwell_s=60), dict(zones=["steps"], time="05:59", dwell_s=31),
                dict(zones=["steps"], time="06:00", dwell_s=31)],
         note="window edges on both zones; exactly 30 vs 30.1"),

    dict(id="c63", setting="shop", camera="car park", zones=["car park", "trolley bay"],
         words="Nothing in the car park is worth an alert while we're open, 8am to 10pm. After closing and "
               "before we open, any car or truck in the car park is an alert. People in the trolley bay are "
               "fine at any hour.",
         meaning=U(_c63),
         cases=[dict(zones=["car park"], label="car", time="08:00"),
                dict(zones=["car park"], label="car", time="07:59"),
                dict(zones=["car park"], label="truck", time="22:00"),
                dict(zones=["car park"], label="car", time="21:59"),
                dict(zones=["car park"], label="dog"), dict(zones=["car park"], time="23:00"),
                dict(zones=["trolley bay"], time="23:00"), dict(zones=["car park"], label="bus", time="23:00"),
                dict(zones=["car park"], label="motorcycle", time="03:00")],
         note="'nothing worth an alert' -> benign for every label while open; 08:00/22:00 edges; unnamed "
              "labels after closing"),

    dict(id="c64", setting="data centre", camera="perimeter", zones=["fence line", "gatehouse"],
         words="Anyone at the fence line is an alert, day or night, except when they're in hi-vis and there "
               "are at least two of them (patrols go in pairs).",
         meaning=U(_c64),
         cases=[dict(zones=["fence line"], hivis=True, people=2), dict(zones=["fence line"], hivis=True, people=1),
                dict(zones=["fence line"], hivis=False, people=2), dict(zones=["fence line"], hivis=None, people=2),
                dict(zones=["fence line"], hivis=None, people=1), dict(zones=["gatehouse"], hivis=False),
                dict(zones=["fence line"], hivis=True, people=3), dict(zones=["fence line"], label="horse")],
         note="exception needs both hi-vis and people >= 2; hi-vis unknown decided when people 1"),

    dict(id="c65", setting="hospital", camera="car park B", zones=["disabled bays", "drop-off"],
         words="Cars waiting in the drop-off for up to 5 minutes are fine; more than 5 minutes is an alert. "
               "Buses in the drop-off are always fine.",
         meaning=U(_c65),
         cases=[dict(zones=["drop-off"], label="car", dwell_s=300),
                dict(zones=["drop-off"], label="car", dwell_s=300.1),
                dict(zones=["drop-off"], label="bus", dwell_s=1000),
                dict(zones=["drop-off"], label="truck", dwell_s=100),
                dict(zones=["disabled bays"], label="car", dwell_s=1000),
                dict(zones=["drop-off"], label="car"), dict(zones=["drop-off"])],
         note="300 inclusive vs 300.1; bus; truck and person unnamed; other zone"),

    dict(id="c66", setting="school", camera="gym", zones=["gym floor", "store cupboard"],
         words="There's a five-a-side league on Friday night, so people on the gym floor then are fine. Any "
               "other night, anyone on the gym floor between 10pm and 6am is an alert.",
         meaning=U(_c66),
         cases=[dict(zones=["gym floor"], weekday="Fri", time="22:00"),
                dict(zones=["gym floor"], weekday="Sat", time="02:00"),
                dict(zones=["gym floor"], weekday="Sat", time="05:59"),
                dict(zones=["gym floor"], weekday="Sat", time="06:00"),
                dict(zones=["gym floor"], weekday="Fri", time="02:00"),
                dict(zones=["gym floor"], weekday="Sat", time="22:00"),
                dict(zones=["gym floor"], weekday="Thu", time="23:00"),
                dict(zones=["gym floor"], weekday="Fri", time="21:59"),
                dict(zones=["store cupboard"], weekday="Fri", time="23:00")],
         note="Friday night = Fri 22:00-Sat 06:00 (starts_on); Fri 02:00 belongs to Thursday night"),

    dict(id="c67", setting="allotment", camera="compost", zones=["trough", "compost"],
         words="Someone wearing a green top at the compost heap is me, that's fine. Anyone else at the "
               "compost between 8 at night and 7 in the morning is an alert; during the day anyone else "
               "there is fine too.",
         meaning=U(_c67),
         cases=[dict(zones=["compost"], upper="green", time="22:00"),
                dict(zones=["compost"], upper="red", time="22:00"),
                dict(zones=["compost"], upper=None, time="22:00"),
                dict(zones=["compost"], upper=None, time="12:00"),
                dict(zones=["compost"], upper="red", time="19:59"),
                dict(zones=["compost"], upper="red", time="20:00"),
                dict(zones=["compost"], upper="red", time="06:59"),
                dict(zones=["compost"], upper="red", time="07:00"),
                dict(zones=["trough"], upper="red", time="22:00"),
                dict(zones=["compost"], label="dog", time="22:00")],
         note="colour unknown: model at night, benign by day (decided); 20:00/07:00 edges"),

    dict(id="c68", setting="hotel", camera="bar", zones=["bar"],
         words="Alert if there are more than four people and fewer than three at the bar.",
         refuse="condition can never hold (people > 4 and < 3)"),

    dict(id="c69", setting="home", camera="side gate", zones=["side gate"],
         words="My neighbour uses the side gate; she wears blue jeans and a white top and she's fine. "
               "Anybody else coming through the side gate between 8pm and 8am is an alert.",
         meaning=U(_c69),
         cases=[dict(zones=["side gate"], upper="white", lower="blue", direction="towards", time="21:00"),
                dict(zones=["side gate"], upper="white", lower="black", direction="towards", time="21:00"),
                dict(zones=["side gate"], upper="red", lower="blue", direction="towards", time="21:00"),
                dict(zones=["side gate"], upper=None, lower="blue", direction="towards", time="21:00"),
                dict(zones=["side gate"], upper="red", lower=None, direction="towards", time="21:00"),
                dict(zones=["side gate"], upper="white", lower="blue", time="12:00"),
                dict(zones=["side gate"], upper="red", lower="black", direction="towards", time="19:59"),
                dict(zones=["side gate"], upper="red", lower="black", direction="towards", time="07:59"),
                dict(zones=["side gate"], upper="red", lower="black", direction="away", time="23:00"),
                dict(zones=["side gate"], upper="red", lower="black", direction="towards", time="08:00")],
         note="both colours must match; one colour unknown decided only when the other already mismatches; "
              "coming through = towards; 20:00/08:00 edges"),

    dict(id="c70", setting="building site", camera="fuel bowser", zones=["bowser"],
         words="Any person at the bowser between 6pm Friday and 6am Monday is an alert. The rest of the week, "
               "people in hi-vis at the bowser are fine and anyone without it is an alert.",
         meaning=U(_c70),
         cases=[dict(zones=["bowser"], weekday="Fri", time="17:59", hivis=True),
                dict(zones=["bowser"], weekday="Fri", time="18:00", hivis=True),
                dict(zones=["bowser"], weekday="Sun", time="12:00", hivis=True),
                dict(zones=["bowser"], weekday="Mon", time="05:59", hivis=True),
                dict(zones=["bowser"], weekday="Mon", time="06:00", hivis=True),
                dict(zones=["bowser"], weekday="Wed", hivis=False),
                dict(zones=["bowser"], weekday="Wed", hivis=None),
                dict(zones=["bowser"], weekday="Sat", hivis=None),
                dict(zones=["bowser"], weekday="Sat", label="truck")],
         note="a window spanning days Fri 18:00 -> Mon 06:00; hi-vis unknown decided only inside it"),
]
