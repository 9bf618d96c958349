"""BLIND3: a blind set of camera policies written in plain English (ids d01..d70).

Each entry: id, setting, camera, zones, words, and either meaning + cases + note, or refuse (+ note).
A meaning takes a fact dict (already merged with DEFAULTS) and returns "alert", "benign" or "model".
Unknown facts (hivis/upper/lower/direction None) are handled by U(): every possible value is tried;
if all verdicts agree that verdict stands, otherwise "model".
"""

DEFAULTS = {"time": "12:00", "weekday": "Wed", "zones": [], "dwell_s": 5.0, "direction": None, "people": 1,
            "label": "person", "hivis": False, "upper": None, "lower": None, "carries": []}

COLOURS = ["red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "white", "grey", "black"]
DIRECTIONS = ["towards", "away", "left", "right"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri"]
WEEKEND = ["Sat", "Sun"]
VEHICLES = ["car", "truck", "bus", "motorcycle"]


def mins(t):
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def within(t, a, b):
    """a <= t < b; wraps past midnight when b <= a."""
    x, lo, hi = mins(t), mins(a), mins(b)
    if lo < hi:
        return lo <= x < hi
    return x >= lo or x < hi


def prev_day(d):
    return DAYS[(DAYS.index(d) - 1) % 7]


def start_day(f, a, b):
    """Day on which the window a-b that contains f's time started (window may wrap)."""
    if mins(b) <= mins(a) and mins(f["time"]) < mins(b):
        return prev_day(f["weekday"])
    return f["weekday"]


def window_on(f, a, b, days):
    """Inside window a-b that starts on one of days (a named night belongs to the day it starts on)."""
    return within(f["time"], a, b) and start_day(f, a, b) in days


def week_span(f, day_a, a, day_b, b):
    """Inside the weekly span from day_a a to day_b b (may wrap over the week's end)."""
    x = DAYS.index(f["weekday"]) * 1440 + mins(f["time"])
    lo = DAYS.index(day_a) * 1440 + mins(a)
    hi = DAYS.index(day_b) * 1440 + mins(b)
    if lo < hi:
        return lo <= x < hi
    return x >= lo or x < hi


def night(f):
    return within(f["time"], "22:00", "06:00")


def daytime(f):
    return within(f["time"], "06:00", "22:00")


def inz(f, *zones):
    return any(z in f["zones"] for z in zones)


def person(f):
    return f["label"] == "person"


def carrying(f, *things):
    return any(c in f["carries"] for c in things)


def U(meaning):
    """Evaluate meaning for every value of each unknown fact; unanimous verdict stands, else model."""
    def run(f):
        g = dict(DEFAULTS)
        g.update(f)
        options = [{}]
        for key, values in (("hivis", [True, False]), ("upper", COLOURS), ("lower", COLOURS),
                            ("direction", DIRECTIONS)):
            if g.get(key) is None:
                options = [dict(o, **{key: v}) for o in options for v in values]
        verdicts = set()
        for o in options:
            h = dict(g)
            h.update(o)
            verdicts.add(meaning(h))
            if len(verdicts) > 1:
                return "model"
        return verdicts.pop()
    return run


# ---------------------------------------------------------------- meanings

def m01(f):
    if f["label"] == "truck" and inz(f, "loading dock"):
        return "benign"
    if person(f) and inz(f, "loading dock") and within(f["time"], "22:00", "06:00"):
        return "benign" if f["hivis"] else "alert"
    return "model"


def m02(f):
    if f["label"] == "cat":
        return "benign"
    if person(f) and inz(f, "driveway"):
        return "benign"
    if person(f) and inz(f, "porch") and f["dwell_s"] > 120:
        return "alert"
    return "model"


def m03(f):
    if not person(f):
        return "model"
    if within(f["time"], "21:00", "08:00"):
        return "alert"
    if inz(f, "till") and f["upper"] != "red":
        return "alert"
    if inz(f, "shop floor") and not inz(f, "till"):
        return "benign"
    return "model"


def m04(f):
    if not (person(f) and inz(f, "playground")):
        return "model"
    if f["weekday"] in WEEKEND:
        return "alert"
    return "benign" if within(f["time"], "08:30", "15:30") else "alert"


def m05(f):
    if not (person(f) and inz(f, "corridor")):
        return "model"
    if f["people"] >= 2 and f["dwell_s"] > 300 and within(f["time"], "00:00", "06:00"):
        return "alert"
    if f["people"] == 1:
        return "benign"
    return "model"


def m06(f):
    if not (person(f) and inz(f, "site")):
        return "model"
    if not f["hivis"]:
        return "alert"
    if f["weekday"] in WEEKDAYS + ["Sat"] and within(f["time"], "07:00", "18:00"):
        return "benign"
    return "alert"


def m07(f):
    if f["label"] in ("dog", "cat") and inz(f, "yard"):
        return "benign"
    if person(f) and inz(f, "barn") and within(f["time"], "22:00", "05:00"):
        return "benign" if carrying(f, "bottle") else "alert"
    return "model"


def m08(f):
    if f["label"] == "truck" and inz(f, "ambulance bay"):
        return "benign"
    if f["label"] == "car" and inz(f, "ambulance bay"):
        return "alert" if f["dwell_s"] > 60 else "model"
    if f["label"] == "car" and inz(f, "visitor bays"):
        return "benign"
    return "model"


def m09(f):
    if not (person(f) and inz(f, "server room door")):
        return "model"
    if f["weekday"] in WEEKDAYS and within(f["time"], "08:00", "18:00"):
        return "benign"
    return "benign" if f["hivis"] else "alert"


def m10(f):
    if f["label"] == "motorcycle" and inz(f, "barrier") and within(f["time"], "23:00", "06:00"):
        if f["direction"] == "towards":
            return "alert"
        if f["direction"] == "away":
            return "benign"
    return "model"


def m12(f):
    if person(f) and inz(f, "shed") and within(f["time"], "20:00", "07:00"):
        return "alert"
    if person(f) and inz(f, "back garden") and within(f["time"], "00:00", "20:00"):
        return "benign"
    return "model"


def m13(f):
    if not (person(f) and inz(f, "entrance")):
        return "model"
    if carrying(f, "knife"):
        return "alert"
    if f["weekday"] != "Sun" and within(f["time"], "09:00", "17:30"):
        return "benign"
    return "model"


def m14(f):
    if person(f) and inz(f, "aisle 3", "aisle 4"):
        return "alert" if f["people"] > 3 else "benign"
    return "model"


def m16(f):
    if not (person(f) and inz(f, "hallway") and f["weekday"] in WEEKDAYS):
        return "model"
    if within(f["time"], "09:00", "12:00") or within(f["time"], "13:00", "15:30"):
        return "alert"
    if within(f["time"], "12:00", "13:00"):
        return "benign"
    return "model"


def m17(f):
    if person(f) and inz(f, "pool", "pool deck") and within(f["time"], "22:00", "07:00"):
        return "benign" if f["hivis"] else "alert"
    return "model"


def m18(f):
    if person(f) and inz(f, "stairwell") and f["dwell_s"] > 180:
        return "alert" if f["people"] == 1 else "benign"
    return "model"


def m19(f):
    if f["label"] in ("car", "truck", "motorcycle") and inz(f, "field gate"):
        if f["direction"] == "away":
            return "benign"
        if f["direction"] == "towards" and within(f["time"], "21:00", "05:00"):
            return "alert"
    return "model"


def m21(f):
    if person(f) and f["hivis"]:
        return "benign"
    if person(f) and inz(f, "ward corridor") and within(f["time"], "23:00", "06:00") and f["dwell_s"] > 30:
        return "alert"
    return "model"


def m22(f):
    if f["label"] == "car":
        return "benign"
    if f["label"] == "bicycle" and inz(f, "car park"):
        return "alert"
    if f["label"] == "bicycle" and inz(f, "bike shed"):
        return "benign"
    return "model"


def m23(f):
    if not (person(f) and inz(f, "exclusion zone")):
        return "model"
    if f["weekday"] in WEEKDAYS and within(f["time"], "07:00", "17:00"):
        return "alert"
    return "benign" if f["hivis"] else "alert"


def m24(f):
    if f["label"] == "dog":
        return "benign"
    if person(f) and inz(f, "garage door", "side path") and within(f["time"], "00:00", "05:00"):
        return "alert"
    return "model"


def m26(f):
    if not (person(f) and inz(f, "stockroom")):
        return "model"
    if f["weekday"] == "Tue" and within(f["time"], "06:00", "12:00"):
        return "benign"
    return "benign" if f["hivis"] else "alert"


def m27(f):
    if not inz(f, "bus bay"):
        return "model"
    if f["label"] == "bus":
        return "benign"
    if f["label"] == "car":
        if within(f["time"], "08:00", "09:00") or within(f["time"], "15:00", "16:00"):
            return "alert"
        return "benign"
    return "model"


def m28(f):
    if not person(f):
        return "model"
    if carrying(f, "suitcase"):
        return "benign"
    if inz(f, "revolving door") and within(f["time"], "01:00", "06:00"):
        return "alert"
    return "model"


def m29(f):
    if not inz(f, "fuel pump"):
        return "model"
    if person(f):
        return "alert" if f["dwell_s"] > 600 else "model"
    if f["label"] == "truck":
        return "alert" if f["weekday"] == "Sun" else "benign"
    return "model"


def m31(f):
    if person(f) and inz(f, "fence line") and within(f["time"], "16:00", "07:00"):
        return "benign" if f["direction"] in ("left", "right") else "alert"
    return "model"


def m32(f):
    if person(f) and inz(f, "helipad"):
        return "benign" if f["hivis"] else "alert"
    return "model"


def m33(f):
    if not (person(f) and inz(f, "lobby")):
        return "model"
    if f["weekday"] in WEEKEND:
        return "alert"
    return "benign" if carrying(f, "backpack") else "model"


def m34(f):
    if inz(f, "entry ramp"):
        return "benign"
    if f["label"] == "car" and inz(f, "exit ramp"):
        if f["direction"] == "towards":
            return "alert"
        if f["direction"] == "away":
            return "benign"
    return "model"


def m35(f):
    if not person(f):
        return "model"
    if f["hivis"] and within(f["time"], "10:00", "14:00"):
        return "benign"
    if inz(f, "front door"):
        return "alert"
    return "model"


def m36(f):
    if not inz(f, "roof"):
        return "model"
    if f["label"] == "bird":
        return "benign"
    if person(f):
        return "alert"
    return "model"


def m37(f):
    if f["label"] in ("dog", "cat") and inz(f, "coop"):
        return "alert" if night(f) else "benign"
    return "model"


def m38(f):
    if person(f) and inz(f, "fitting rooms"):
        if f["people"] >= 4:
            return "alert"
        if f["people"] == 3:
            return "benign"
    return "model"


def m40(f):
    if person(f) and inz(f, "bar") and within(f["time"], "23:30", "10:00"):
        return "alert"
    if person(f) and inz(f, "terrace") and within(f["time"], "18:00", "01:00"):
        return "benign"
    return "model"


def m41(f):
    if not person(f):
        return "model"
    if inz(f, "hoarding") and f["dwell_s"] > 20 and (
            within(f["time"], "18:00", "07:00") or f["weekday"] in WEEKEND):
        return "alert"
    if inz(f, "footpath") and not inz(f, "hoarding"):
        return "benign"
    return "model"


def m42(f):
    if not (person(f) and inz(f, "front gate")):
        return "model"
    if within(f["time"], "15:00", "15:45"):
        return "benign"
    return "alert" if f["people"] > 5 else "model"


def m44(f):
    if not person(f):
        return "model"
    if inz(f, "pharmacy hatch"):
        if within(f["time"], "20:00", "06:00") and f["dwell_s"] > 900:
            return "alert"
        return "benign"
    if inz(f, "waiting area"):
        return "benign"
    return "model"


def m45(f):
    if not (person(f) and inz(f, "kitchen")):
        return "model"
    if f["weekday"] in WEEKEND:
        return "alert"
    if within(f["time"], "19:00", "21:00"):
        return "benign"
    if within(f["time"], "18:00", "22:00"):
        return "alert"
    return "model"


def m46(f):
    if f["label"] == "car" and inz(f, "barrier"):
        if f["dwell_s"] > 90:
            return "alert"
        if f["dwell_s"] < 90:
            return "benign"
    return "model"


def m47(f):
    if person(f) and inz(f, "pool edge"):
        return "alert" if f["people"] == 1 else "benign"
    return "model"


def m48(f):
    if not inz(f, "farm gate"):
        return "model"
    if (person(f) or f["label"] in VEHICLES) and within(f["time"], "21:00", "06:00"):
        return "alert"
    if f["label"] == "truck" and within(f["time"], "06:00", "21:00"):
        return "benign"
    return "model"


def m49(f):
    if f["label"] == "car" and inz(f, "disabled bays"):
        return "benign"
    if person(f) and inz(f, "trolley bay") and within(f["time"], "22:00", "06:00") and f["dwell_s"] > 300:
        return "alert"
    return "model"


def m50(f):
    if person(f) and inz(f, "staff car park") and f["weekday"] in WEEKEND:
        return "alert"
    return "model"


def m51(f):
    if f["label"] == "truck" and inz(f, "service door"):
        if f["weekday"] != "Sun" and within(f["time"], "06:00", "11:00"):
            return "benign"
        return "alert"
    if person(f) and inz(f, "bins") and within(f["time"], "07:00", "00:00"):
        return "benign"
    return "model"


def m52(f):
    if person(f) and inz(f, "mezzanine"):
        if not (f["hivis"] and f["upper"] in ("black", "grey")):
            return "alert"
    return "model"


def m53(f):
    if not inz(f, "bike cage"):
        return "model"
    if f["label"] == "bicycle":
        if within(f["time"], "07:00", "19:00"):
            return "benign"
        if within(f["time"], "19:00", "06:00"):
            return "alert"
        return "model"
    if person(f) and within(f["time"], "22:00", "06:00"):
        return "alert"
    return "model"


def m54(f):
    if person(f) and inz(f, "kitchen door") and night(f) and f["direction"] == "towards":
        return "benign" if f["hivis"] else "alert"
    return "model"


def m55(f):
    if not inz(f, "ambulance lane"):
        return "model"
    if person(f):
        return "benign" if f["hivis"] else "alert"
    if f["label"] == "car":
        return "alert"
    if f["label"] in ("bus", "truck"):
        return "benign"
    return "model"


def m56(f):
    if person(f) and inz(f, "side gate") and carrying(f, "backpack", "suitcase") and \
            within(f["time"], "23:00", "05:00"):
        return "alert"
    return "benign"


def m57(f):
    if not person(f):
        return "model"
    if inz(f, "counter") and carrying(f, "knife"):
        return "alert"
    if inz(f, "window display"):
        if within(f["time"], "18:00", "06:00") and f["dwell_s"] > 45:
            return "alert"
        if within(f["time"], "09:00", "18:00"):
            return "benign"
    return "model"


def m58(f):
    if not (person(f) and inz(f, "server room")):
        return "model"
    if f["people"] >= 2:
        if f["weekday"] == "Sun" and within(f["time"], "02:00", "04:00"):
            return "benign"
        return "alert"
    return "benign"


def m59(f):
    if not (f["label"] == "truck" and inz(f, "gate")):
        return "model"
    if f["direction"] == "away":
        return "benign"
    if f["direction"] == "towards" and within(f["time"], "20:00", "06:00"):
        return "benign" if window_on(f, "22:00", "06:00", ["Sat"]) else "alert"
    return "model"


def m60(f):
    if not inz(f, "roof"):
        return "model"
    if f["label"] == "sports ball":
        return "benign"
    if person(f):
        if f["hivis"] and f["weekday"] in WEEKDAYS and daytime(f):
            return "benign"
        return "alert"
    return "model"


def m61(f):
    if person(f) and inz(f, "car park") and week_span(f, "Fri", "22:00", "Mon", "06:00") and \
            f["upper"] in ("black", "blue"):
        return "alert"
    return "model"


def m62(f):
    if not (person(f) and inz(f, "tool store")):
        return "model"
    if f["direction"] == "away" and carrying(f, "suitcase", "backpack"):
        return "alert"
    if not f["carries"]:
        return "benign"
    return "model"


def m63(f):
    if person(f) and inz(f, "smoking shelter"):
        return "alert" if f["people"] > 4 or f["dwell_s"] > 1200 else "benign"
    return "model"


def m64(f):
    if not person(f):
        return "model"
    if inz(f, "front steps") and within(f["time"], "19:00", "07:00") and f["direction"] != "away":
        return "alert"
    if inz(f, "pavement") and not inz(f, "front steps"):
        return "benign"
    return "model"


def m65(f):
    if f["label"] == "dog":
        return "benign"
    if person(f) and inz(f, "honesty box"):
        return "alert" if within(f["time"], "20:00", "07:00") else "benign"
    return "model"


def m66(f):
    if person(f) and inz(f, "forecourt") and (within(f["time"], "20:00", "06:00") or f["weekday"] == "Sun"):
        if not f["hivis"] or f["upper"] != "yellow":
            return "alert"
    return "model"


def m67(f):
    if f["label"] == "car" and inz(f, "charger") and within(f["time"], "00:00", "06:00") and f["dwell_s"] > 14400:
        return "alert"
    return "model"


def m68(f):
    if person(f) and inz(f, "playground") and f["weekday"] in WEEKDAYS and within(f["time"], "08:45", "15:15"):
        return "benign" if (f["upper"] == "green" and f["lower"] == "grey") else "alert"
    return "model"


def m69(f):
    if person(f) and inz(f, "fire exit"):
        if f["weekday"] == "Mon" and within(f["time"], "11:00", "11:30"):
            return "benign"
        return "alert"
    return "model"


def m70(f):
    if not (person(f) and inz(f, "fence")):
        return "model"
    if week_span(f, "Sat", "14:00", "Mon", "06:00"):
        return "alert"
    if f["dwell_s"] > 60:
        return "alert"
    if f["direction"] in ("left", "right"):
        return "benign"
    return "model"


# ---------------------------------------------------------------- the set

BLIND3 = [
    dict(id="d01", setting="warehouse", camera="dock", zones=["loading dock", "office door"],
         words="Between 10 at night and 6 in the morning, anyone on the loading dock is an alert unless they're "
               "wearing hi-vis. Trucks at the dock are fine any time.",
         meaning=U(m01),
         cases=[dict(zones=["loading dock"], time="22:00"),
                dict(zones=["loading dock"], time="21:59"),
                dict(zones=["loading dock"], time="05:59", hivis=True),
                dict(zones=["loading dock"], time="06:00"),
                dict(zones=["loading dock"], time="02:00", hivis=None),
                dict(zones=["loading dock"], time="03:00", label="truck"),
                dict(zones=["office door"], time="23:00"),
                dict(zones=["loading dock"], time="23:00", label="dog")],
         note="'alert unless hi-vis': the excepted people (hi-vis) read as benign. Outside 22-06 no verdict for "
              "people. Trucks benign any time."),

    dict(id="d02", setting="home", camera="front porch", zones=["porch", "driveway"],
         words="Let me know if someone hangs around on the porch for more than two minutes. Nobody on the driveway "
               "matters to me, and the cat is never a problem.",
         meaning=U(m02),
         cases=[dict(zones=["porch"], dwell_s=121),
                dict(zones=["porch"], dwell_s=120),
                dict(zones=["porch"], dwell_s=30),
                dict(zones=["driveway"], dwell_s=600),
                dict(zones=["porch"], label="cat", dwell_s=900),
                dict(zones=["driveway"], label="car"),
                dict(zones=["porch"], dwell_s=300, time="03:00", weekday="Sun")],
         note="More than two minutes is strictly >120 s. People on the driveway benign; short porch visits model. "
              "Car on driveway: 'Nobody' is people, so model."),

    dict(id="d03", setting="retail shop", camera="shop interior", zones=["shop floor", "stockroom", "till"],
         words="The shop closes at 9pm and opens at 8am. While we're closed, any person inside is an alert. While "
               "we're open, ignore customers on the shop floor, but anyone behind the till who isn't wearing a red "
               "top should be flagged.",
         meaning=U(m03),
         cases=[dict(zones=["shop floor"], time="21:00"),
                dict(zones=["shop floor"], time="20:59"),
                dict(zones=["stockroom"], time="07:59"),
                dict(zones=["till"], time="08:00", upper="blue"),
                dict(zones=["till"], time="14:00", upper="red"),
                dict(zones=["till"], time="14:00"),
                dict(zones=["stockroom"], time="14:00"),
                dict(zones=["shop floor", "till"], time="10:00", upper="black"),
                dict(zones=["shop floor"], time="23:00", label="cat")],
         note="Closed 21:00-08:00 (any zone, any top). Open: shop floor benign; till with a non-red top alert, red "
              "top no verdict (model), unknown top model. 'but' lets the till rule win over the shop floor one."),

    dict(id="d04", setting="primary school", camera="playground", zones=["main gate", "playground"],
         words="No one should be in the playground on weekends. During the week, the playground is fine from 8:30 "
               "to 3:30; outside those hours send an alert for anybody there.",
         meaning=U(m04),
         cases=[dict(zones=["playground"], weekday="Sat", time="11:00"),
                dict(zones=["playground"], weekday="Mon", time="08:30"),
                dict(zones=["playground"], weekday="Mon", time="08:29"),
                dict(zones=["playground"], weekday="Fri", time="15:30"),
                dict(zones=["playground"], weekday="Fri", time="15:29"),
                dict(zones=["main gate"], weekday="Sun"),
                dict(zones=["playground"], weekday="Sun", label="dog")],
         note="3:30 read as 15:30 (school day). Weekends whole days. Dogs are not 'anybody' -> model."),

    dict(id="d05", setting="hotel", camera="3rd floor corridor", zones=["corridor", "lift lobby"],
         words="Guests walk this corridor all night, so don't alert on a single person in it. Two or more people "
               "standing in the corridor for over 5 minutes after midnight is worth an alert, though.",
         meaning=U(m05),
         cases=[dict(zones=["corridor"], time="02:00", people=1, dwell_s=900),
                dict(zones=["corridor"], time="02:00", people=2, dwell_s=301),
                dict(zones=["corridor"], time="02:00", people=2, dwell_s=300),
                dict(zones=["corridor"], time="06:00", people=3, dwell_s=600),
                dict(zones=["corridor"], time="23:50", people=2, dwell_s=600),
                dict(zones=["lift lobby"], time="02:00", people=4, dwell_s=600),
                dict(zones=["corridor"], time="00:00", people=2, dwell_s=400)],
         note="'after midnight' with no end read as 00:00-06:00 (convention 3). Groups outside that: model."),

    dict(id="d06", setting="building site", camera="site overview", zones=["site", "gate"],
         words="Anyone on site without hi-vis is an alert, day or night. People in hi-vis are fine between 7am and "
               "6pm Monday to Saturday; outside that, alert on them too.",
         meaning=U(m06),
         cases=[dict(zones=["site"], hivis=False, time="10:00"),
                dict(zones=["site"], hivis=True, time="10:00", weekday="Sat"),
                dict(zones=["site"], hivis=True, time="10:00", weekday="Sun"),
                dict(zones=["site"], hivis=True, time="18:00", weekday="Tue"),
                dict(zones=["site"], hivis=True, time="07:00", weekday="Tue"),
                dict(zones=["site"], hivis=None, time="12:00"),
                dict(zones=["site"], hivis=None, time="20:00"),
                dict(zones=["gate"], hivis=False, time="03:00")],
         note="Unknown hi-vis: inside hours verdicts differ (model), outside hours both alert."),

    dict(id="d07", setting="farm", camera="yard", zones=["yard", "barn"],
         words="Dogs and cats in the yard are normal. Alert me to any person in the barn at night, that's 10pm till "
               "5am, but never for someone carrying a bottle - that's the milker.",
         meaning=U(m07),
         cases=[dict(zones=["barn"], time="22:00"),
                dict(zones=["barn"], time="04:59", carries=["bottle"]),
                dict(zones=["barn"], time="05:00"),
                dict(zones=["barn"], time="21:00"),
                dict(zones=["yard"], label="dog", time="02:00"),
                dict(zones=["yard"], label="cat"),
                dict(zones=["barn"], label="dog", time="23:00"),
                dict(zones=["yard"], time="23:00")],
         note="Night defined by the writer as 22:00-05:00. Bottle carrier benign ('never' alert)."),

    dict(id="d08", setting="hospital", camera="front car park", zones=["ambulance bay", "visitor bays"],
         words="Any car left in the ambulance bay over a minute gets an alert. Trucks in the ambulance bay are fine. "
               "Cars in the visitor bays are fine.",
         meaning=U(m08),
         cases=[dict(zones=["ambulance bay"], label="car", dwell_s=61),
                dict(zones=["ambulance bay"], label="car", dwell_s=60),
                dict(zones=["ambulance bay"], label="truck", dwell_s=900),
                dict(zones=["visitor bays"], label="car", dwell_s=9000),
                dict(zones=["ambulance bay"], dwell_s=300),
                dict(zones=["visitor bays"], label="motorcycle")],
         note="Over a minute = >60 s."),

    dict(id="d09", setting="office", camera="ground floor", zones=["reception", "server room door"],
         words="Nobody but people in hi-vis should be at the server room door outside office hours (8 to 6 on "
               "weekdays). During office hours I don't care who's at that door.",
         meaning=U(m09),
         cases=[dict(zones=["server room door"], weekday="Mon", time="07:59"),
                dict(zones=["server room door"], weekday="Mon", time="08:00"),
                dict(zones=["server room door"], weekday="Fri", time="18:00", hivis=True),
                dict(zones=["server room door"], weekday="Sat", time="12:00", hivis=None),
                dict(zones=["server room door"], weekday="Wed", time="12:00", hivis=None),
                dict(zones=["reception"], weekday="Sat", time="12:00")],
         note="'Nobody but hi-vis' -> hi-vis benign, others alert outside Mon-Fri 08-18. Reception never mentioned."),

    dict(id="d10", setting="car park", camera="barrier", zones=["barrier", "pay station"],
         words="Motorcycles going towards the barrier after 11pm are an alert. If they're heading away, leave them.",
         meaning=U(m10),
         cases=[dict(zones=["barrier"], label="motorcycle", time="23:00", direction="towards"),
                dict(zones=["barrier"], label="motorcycle", time="22:59", direction="towards"),
                dict(zones=["barrier"], label="motorcycle", time="05:59", direction="towards"),
                dict(zones=["barrier"], label="motorcycle", time="06:00", direction="towards"),
                dict(zones=["barrier"], label="motorcycle", time="01:00", direction="away"),
                dict(zones=["barrier"], label="motorcycle", time="01:00", direction="left"),
                dict(zones=["barrier"], label="motorcycle", time="01:00"),
                dict(zones=["barrier"], label="car", time="01:00", direction="towards")],
         note="'after 11pm' runs to 06:00. 'they' = those motorcycles after 11pm, so 'away' is benign only in "
              "that window. Unknown direction -> model."),

    dict(id="d11", setting="home", camera="front door", zones=["front door"],
         words="Alert me if anyone at the front door looks suspicious or is a stranger.",
         refuse="every rule needs facts that do not exist (suspicious look, identity)",
         note="Nothing in the facts shows suspicion or who someone is."),

    dict(id="d12", setting="home", camera="back garden", zones=["back garden", "shed"],
         words="The kids play in the back garden until dusk, so nobody in the garden is a problem before 8pm. After "
               "8pm and before 7 in the morning, anyone at the shed is an alert.",
         meaning=U(m12),
         cases=[dict(zones=["back garden"], time="19:59"),
                dict(zones=["back garden"], time="20:00"),
                dict(zones=["shed"], time="20:00"),
                dict(zones=["shed"], time="06:59"),
                dict(zones=["shed"], time="07:00"),
                dict(zones=["back garden"], time="03:00"),
                dict(zones=["shed"], time="02:00", label="cat")],
         note="'before 8pm' with no start runs from midnight (convention 3), so the garden is benign 00:00-20:00 "
              "(unsure: the writer may have meant daytime only). 'until dusk' is colour, not a rule."),

    dict(id="d13", setting="retail shop", camera="entrance", zones=["entrance", "car park"],
         words="Flag anybody who comes in with a knife. Umbrellas, backpacks and handbags are fine. Other than that, "
               "customers at the entrance are fine during opening hours, 9 to 5:30, Monday to Saturday.",
         meaning=U(m13),
         cases=[dict(zones=["entrance"], carries=["knife"], time="10:00"),
                dict(zones=["entrance"], carries=["knife", "umbrella"], time="23:00", weekday="Sun"),
                dict(zones=["entrance"], carries=["backpack"], time="10:00"),
                dict(zones=["entrance"], time="17:30"),
                dict(zones=["entrance"], time="17:29", weekday="Sat"),
                dict(zones=["entrance"], time="12:00", weekday="Sun"),
                dict(zones=["entrance"], carries=["umbrella"], time="22:00"),
                dict(zones=["car park"], carries=["knife"])],
         note="Knife at the entrance always alert. 'Umbrellas... are fine' read as 'not a reason to alert', not "
              "blanket benign: outside hours still model. Knife in the car park: 'comes in' = entrance, so model."),

    dict(id="d14", setting="warehouse", camera="racking aisles", zones=["aisle 3", "aisle 4", "forklift bay"],
         words="When there are more than 3 people in aisle 3 or aisle 4, alert. Three or fewer is fine.",
         meaning=U(m14),
         cases=[dict(zones=["aisle 3"], people=4),
                dict(zones=["aisle 4"], people=3),
                dict(zones=["aisle 4"], people=1, time="03:00"),
                dict(zones=["forklift bay"], people=6),
                dict(zones=["aisle 3"], label="truck", people=5),
                dict(zones=["aisle 3", "aisle 4"], people=7)],
         note="Count read from a person event only; a truck event in the aisle -> model (unsure)."),

    dict(id="d15", setting="home", camera="driveway", zones=["driveway"],
         words="Alert on any car in the driveway after 10pm. Cars parked in the driveway overnight are never a "
               "problem.",
         refuse="two sentences give different verdicts to a car in the driveway at night, no word says which wins",
         note="Conflict without precedence."),

    dict(id="d16", setting="secondary school", camera="main hallway", zones=["hallway", "staff room door"],
         words="During lessons (9:00-12:00 and 13:00-15:30, weekdays) there shouldn't be kids in the hallway, so "
               "alert on anyone there then. Lunch is fine.",
         meaning=U(m16),
         cases=[dict(zones=["hallway"], time="09:00", weekday="Tue"),
                dict(zones=["hallway"], time="11:59", weekday="Tue"),
                dict(zones=["hallway"], time="12:30", weekday="Tue"),
                dict(zones=["hallway"], time="13:00", weekday="Thu"),
                dict(zones=["hallway"], time="15:30", weekday="Thu"),
                dict(zones=["hallway"], time="10:00", weekday="Sat"),
                dict(zones=["staff room door"], time="10:00")],
         note="Lunch read as the gap 12:00-13:00 between the stated lessons (unsure). Weekends and other hours model."),

    dict(id="d17", setting="hotel", camera="pool", zones=["pool", "pool deck"],
         words="Pool's closed from 10pm to 7am. Nobody should be in the pool or on the deck then. Don't alert on "
               "anyone wearing hi-vis, that's the cleaning crew.",
         meaning=U(m17),
         cases=[dict(zones=["pool"], time="22:00"),
                dict(zones=["pool deck"], time="06:59"),
                dict(zones=["pool deck"], time="07:00"),
                dict(zones=["pool"], time="23:00", hivis=True),
                dict(zones=["pool"], time="23:00", hivis=None),
                dict(zones=["pool"], time="15:00", hivis=True)],
         note="Hi-vis exception scoped to the closed hours; daytime hi-vis not covered (model; unsure - could be "
              "benign at all hours)."),

    dict(id="d18", setting="car park", camera="stairwell", zones=["level 2", "stairwell"],
         words="Someone standing in the stairwell for over 3 minutes is worth a look, but not if there's more than "
               "one person - it's probably just friends chatting.",
         meaning=U(m18),
         cases=[dict(zones=["stairwell"], dwell_s=181, people=1),
                dict(zones=["stairwell"], dwell_s=180, people=1),
                dict(zones=["stairwell"], dwell_s=400, people=2),
                dict(zones=["stairwell"], dwell_s=60, people=3),
                dict(zones=["level 2"], dwell_s=900, people=1)],
         note="'worth a look' = alert; 'but not' exception = benign, only for the long-stay case."),

    dict(id="d19", setting="farm", camera="field gate", zones=["field gate", "lane"],
         words="Tell me about any car, truck or motorcycle coming towards the field gate from 9 in the evening to 5 "
               "in the morning. Anything driving away from the gate is fine.",
         meaning=U(m19),
         cases=[dict(zones=["field gate"], label="car", time="21:00", direction="towards"),
                dict(zones=["field gate"], label="truck", time="04:59", direction="towards"),
                dict(zones=["field gate"], label="truck", time="05:00", direction="towards"),
                dict(zones=["field gate"], label="motorcycle", time="13:00", direction="away"),
                dict(zones=["field gate"], label="car", time="23:00"),
                dict(zones=["field gate"], label="car", time="23:00", direction="right"),
                dict(zones=["lane"], label="car", time="23:00", direction="towards"),
                dict(zones=["field gate"], time="23:00", direction="towards")],
         note="Driving away is benign at any hour (vehicles only). A person is not one of the listed vehicles."),

    dict(id="d20", setting="restaurant", camera="back door", zones=["back door"],
         words="Staff can use the back door whenever they like; customers can't. Alert on customers at the back door.",
         refuse="every rule needs a role (staff vs customer) that the facts cannot show",
         note="No visible marker given for staff."),

    dict(id="d21", setting="hospital", camera="ward 7 corridor", zones=["ward corridor", "nurses' station"],
         words="Patients wandering the ward corridor at night (11pm-6am) need checking on: alert on anyone there "
               "without hi-vis for more than 30 seconds. Nurses wear hi-vis and are fine.",
         meaning=U(m21),
         cases=[dict(zones=["ward corridor"], time="23:00", dwell_s=31),
                dict(zones=["ward corridor"], time="23:00", dwell_s=30),
                dict(zones=["ward corridor"], time="05:59", dwell_s=100, hivis=True),
                dict(zones=["ward corridor"], time="06:00", dwell_s=100),
                dict(zones=["ward corridor"], time="02:00", dwell_s=100, hivis=None),
                dict(zones=["nurses' station"], time="02:00", dwell_s=100, hivis=True),
                dict(zones=["nurses' station"], time="02:00", dwell_s=100)],
         note="People in hi-vis benign anywhere on this camera; 'for more than 30 seconds' = dwell >30."),

    dict(id="d22", setting="office", camera="car park", zones=["car park", "bike shed"],
         words="Bicycles are fine in the bike shed but not in the car park. Don't alert on cars at all.",
         meaning=U(m22),
         cases=[dict(zones=["bike shed"], label="bicycle"),
                dict(zones=["car park"], label="bicycle"),
                dict(zones=["car park"], label="car", time="03:00"),
                dict(zones=["bike shed"], label="car"),
                dict(zones=["car park"]),
                dict(zones=["bike shed"], label="motorcycle")],
         note="'not fine' read as alert. Cars benign everywhere ('at all')."),

    dict(id="d23", setting="building site", camera="tower crane", zones=["exclusion zone", "site office"],
         words="The exclusion zone under the crane is off limits to everybody, hi-vis or not, while the crane runs, "
               "which is 7am to 5pm on weekdays. Outside those hours only people in hi-vis may go in.",
         meaning=U(m23),
         cases=[dict(zones=["exclusion zone"], hivis=True, time="07:00", weekday="Mon"),
                dict(zones=["exclusion zone"], hivis=True, time="17:00", weekday="Mon"),
                dict(zones=["exclusion zone"], hivis=False, time="17:00", weekday="Mon"),
                dict(zones=["exclusion zone"], hivis=None, time="09:00", weekday="Thu"),
                dict(zones=["exclusion zone"], hivis=None, time="09:00", weekday="Sat"),
                dict(zones=["exclusion zone"], hivis=True, time="06:59", weekday="Fri"),
                dict(zones=["site office"], time="09:00")],
         note="'only hi-vis may go in' -> hi-vis benign, others alert, outside the crane hours."),

    dict(id="d24", setting="home", camera="garage", zones=["garage door", "side path"],
         words="If the garage door area has someone in it between midnight and 5, ping me. Same for the side path. "
               "The dog's allowed out there whenever.",
         meaning=U(m24),
         cases=[dict(zones=["garage door"], time="00:00"),
                dict(zones=["side path"], time="04:59"),
                dict(zones=["side path"], time="05:00"),
                dict(zones=["garage door"], time="23:59"),
                dict(zones=["garage door"], label="dog", time="02:00"),
                dict(zones=["side path"], label="cat", time="02:00")],
         note="'midnight and 5' = 00:00-05:00."),

    dict(id="d25", setting="office", camera="lobby", zones=["lobby"],
         words="Alert on anyone in the lobby between 8pm and 26:00.",
         refuse="impossible time (26:00)",
         note=""),

    dict(id="d26", setting="retail shop", camera="stockroom", zones=["stockroom", "back door"],
         words="Only staff in hi-vis vests go into the stockroom. Anybody else in there is an alert, except during "
               "the delivery on Tuesday mornings, when anyone can be in there.",
         meaning=U(m26),
         cases=[dict(zones=["stockroom"], hivis=True, time="15:00"),
                dict(zones=["stockroom"], hivis=False, time="15:00"),
                dict(zones=["stockroom"], hivis=False, time="06:00", weekday="Tue"),
                dict(zones=["stockroom"], hivis=False, time="12:00", weekday="Tue"),
                dict(zones=["stockroom"], hivis=None, time="11:59", weekday="Tue"),
                dict(zones=["stockroom"], hivis=None, time="11:59", weekday="Wed"),
                dict(zones=["back door"], hivis=False)],
         note="Staff are told apart by hi-vis (allowed). Tuesday morning = Tue 06:00-12:00."),

    dict(id="d27", setting="school", camera="bus bay", zones=["bus bay", "crossing"],
         words="Buses belong in the bus bay. Cars in the bus bay between 8 and 9 in the morning or 3 and 4 in the "
               "afternoon are an alert. Any other time, cars there are fine.",
         meaning=U(m27),
         cases=[dict(zones=["bus bay"], label="bus", time="08:30"),
                dict(zones=["bus bay"], label="car", time="08:00"),
                dict(zones=["bus bay"], label="car", time="09:00"),
                dict(zones=["bus bay"], label="car", time="15:59", weekday="Sat"),
                dict(zones=["bus bay"], label="car", time="16:00"),
                dict(zones=["bus bay"], label="truck", time="08:30"),
                dict(zones=["crossing"], label="car", time="08:30")],
         note="No weekday limit stated, so the car windows apply every day."),

    dict(id="d28", setting="hotel", camera="front entrance", zones=["revolving door", "taxi rank"],
         words="People with suitcases are guests; never alert on them. Someone at the revolving door after 1am who "
               "has no suitcase should be flagged.",
         meaning=U(m28),
         cases=[dict(zones=["revolving door"], time="01:00"),
                dict(zones=["revolving door"], time="00:59"),
                dict(zones=["revolving door"], time="05:59"),
                dict(zones=["revolving door"], time="06:00"),
                dict(zones=["revolving door"], time="03:00", carries=["suitcase"]),
                dict(zones=["taxi rank"], time="03:00", carries=["suitcase", "handbag"]),
                dict(zones=["taxi rank"], time="03:00")],
         note="'after 1am' with no end read as running to 06:00 (night hour, like 'after 9pm'; unsure). Suitcase "
              "carriers benign anywhere, any time."),

    dict(id="d29", setting="warehouse", camera="fuel yard", zones=["yard", "fuel pump"],
         words="Anyone at the fuel pump who stays longer than ten minutes gets flagged. Trucks at the pump: alert "
               "only if it's Sunday.",
         meaning=U(m29),
         cases=[dict(zones=["fuel pump"], dwell_s=601),
                dict(zones=["fuel pump"], dwell_s=600),
                dict(zones=["fuel pump"], label="truck", weekday="Sun", time="00:00"),
                dict(zones=["fuel pump"], label="truck", weekday="Sat", time="23:59"),
                dict(zones=["fuel pump"], label="truck", weekday="Mon"),
                dict(zones=["yard"], dwell_s=900),
                dict(zones=["fuel pump"], label="car", weekday="Sun")],
         note="'alert only if Sunday' read as: trucks on other days benign (unsure; could be model)."),

    dict(id="d30", setting="car park", camera="barrier", zones=["barrier"],
         words="Alert when a car waits at the barrier for more than 10 minutes and less than 5.",
         refuse="condition can never hold (dwell over 600 s and under 300 s at once)",
         note=""),

    dict(id="d31", setting="school", camera="sports field", zones=["pitch", "fence line"],
         words="After school - 4pm - through to 7am, the fence line should be empty. Alert on any person along it, "
               "apart from anyone walking left or right along the path, that's just the public footpath.",
         meaning=U(m31),
         cases=[dict(zones=["fence line"], time="16:00", direction="towards"),
                dict(zones=["fence line"], time="15:59", direction="towards"),
                dict(zones=["fence line"], time="06:59", direction="away"),
                dict(zones=["fence line"], time="07:00", direction="away"),
                dict(zones=["fence line"], time="20:00", direction="left"),
                dict(zones=["fence line"], time="20:00", direction="right"),
                dict(zones=["fence line"], time="20:00"),
                dict(zones=["pitch"], time="20:00", direction="towards")],
         note="Unknown direction: left/right benign vs towards/away alert -> model."),

    dict(id="d32", setting="hospital", camera="roof", zones=["helipad", "roof door"],
         words="Nobody goes near the helipad unless they're in hi-vis. No exceptions at night either.",
         meaning=U(m32),
         cases=[dict(zones=["helipad"]),
                dict(zones=["helipad"], hivis=True, time="03:00"),
                dict(zones=["helipad"], time="03:00"),
                dict(zones=["helipad"], hivis=None),
                dict(zones=["roof door"], time="03:00"),
                dict(zones=["helipad"], label="bird")],
         note="'unless hi-vis' -> benign for hi-vis, alert otherwise, all hours."),

    dict(id="d33", setting="office", camera="lobby", zones=["lobby", "lift"],
         words="Couriers with backpacks are fine in the lobby on weekdays. At weekends anybody in the lobby is an "
               "alert, whatever they carry.",
         meaning=U(m33),
         cases=[dict(zones=["lobby"], carries=["backpack"], weekday="Fri", time="23:00"),
                dict(zones=["lobby"], weekday="Fri"),
                dict(zones=["lobby"], carries=["backpack"], weekday="Sat"),
                dict(zones=["lobby"], weekday="Sun", time="00:30"),
                dict(zones=["lift"], weekday="Sun"),
                dict(zones=["lobby"], carries=["handbag"], weekday="Mon")],
         note="'Couriers' identified by the backpack. Weekend = Sat/Sun all day."),

    dict(id="d34", setting="shopping centre car park", camera="ramps", zones=["entry ramp", "exit ramp"],
         words="Cars coming towards the camera on the exit ramp are going the wrong way: alert. Cars driving away on "
               "the exit ramp, and anything on the entry ramp, are fine.",
         meaning=U(m34),
         cases=[dict(zones=["exit ramp"], label="car", direction="towards"),
                dict(zones=["exit ramp"], label="car", direction="away"),
                dict(zones=["exit ramp"], label="car"),
                dict(zones=["exit ramp"], label="car", direction="left"),
                dict(zones=["entry ramp"], label="car", direction="towards"),
                dict(zones=["entry ramp"], direction="away"),
                dict(zones=["exit ramp"], label="motorcycle", direction="towards")],
         note="'anything on the entry ramp' benign for every label."),

    dict(id="d35", setting="home", camera="front door", zones=["front door", "letterbox"],
         words="Don't bother me about the postman. He wears hi-vis and comes between 10 and 2. Anyone else at the "
               "front door, day or night, I want to know.",
         meaning=U(m35),
         cases=[dict(zones=["front door"], hivis=True, time="10:00"),
                dict(zones=["front door"], hivis=True, time="14:00"),
                dict(zones=["front door"], hivis=False, time="11:00"),
                dict(zones=["front door"], hivis=None, time="11:00"),
                dict(zones=["front door"], hivis=None, time="03:00"),
                dict(zones=["letterbox"], hivis=True, time="13:59"),
                dict(zones=["letterbox"], hivis=False, time="13:00")],
         note="Postman = a person in hi-vis 10:00-14:00 (anywhere on camera) -> benign; anyone else at the front "
              "door alert."),

    dict(id="d36", setting="warehouse", camera="roof", zones=["roof"],
         words="Nobody, ever, on the roof. Birds are fine.",
         meaning=U(m36),
         cases=[dict(zones=["roof"]),
                dict(zones=["roof"], hivis=True, time="03:00"),
                dict(zones=["roof"], label="bird"),
                dict(zones=["roof"], label="cat"),
                dict(zones=[])],
         note="No zone -> not on the roof -> model."),

    dict(id="d37", setting="farm", camera="chicken coop", zones=["coop", "paddock"],
         words="Dogs and cats near the coop at night are an alert. During the day, don't worry about them.",
         meaning=U(m37),
         cases=[dict(zones=["coop"], label="dog", time="22:00"),
                dict(zones=["coop"], label="cat", time="05:59"),
                dict(zones=["coop"], label="cat", time="06:00"),
                dict(zones=["coop"], label="dog", time="21:59"),
                dict(zones=["paddock"], label="dog", time="23:00"),
                dict(zones=["coop"], time="23:00")],
         note="Night 22-06, day 06-22 (day parts). 'near the coop' = in the coop zone."),

    dict(id="d38", setting="clothing shop", camera="fitting rooms", zones=["fitting rooms", "shop floor"],
         words="More than two people going into one fitting room isn't right. Alert if there are three or more "
               "people in the fitting rooms - except kids go in with parents, so allow exactly three.",
         meaning=U(m38),
         cases=[dict(zones=["fitting rooms"], people=4),
                dict(zones=["fitting rooms"], people=3),
                dict(zones=["fitting rooms"], people=2),
                dict(zones=["fitting rooms"], people=1),
                dict(zones=["shop floor"], people=6),
                dict(zones=["fitting rooms"], people=9, time="20:00")],
         note="Net rule: 4+ alert, exactly 3 benign, 1-2 no verdict (model)."),

    dict(id="d39", setting="warehouse", camera="loading dock", zones=["loading dock"],
         words="Trucks at the loading dock are fine on weekdays. Any truck at the loading dock on Friday is an alert.",
         refuse="Friday is a weekday: two sentences give opposite verdicts, no word says which wins",
         note=""),

    dict(id="d40", setting="hotel", camera="bar", zones=["bar", "terrace"],
         words="Bar closes at half eleven. From then until 10 the next morning, alert on anyone behind the bar. The "
               "terrace stays open from 6pm until one, so people out there then are fine.",
         meaning=U(m40),
         cases=[dict(zones=["bar"], time="23:30"),
                dict(zones=["bar"], time="23:29"),
                dict(zones=["bar"], time="09:59"),
                dict(zones=["bar"], time="10:00"),
                dict(zones=["terrace"], time="00:59"),
                dict(zones=["terrace"], time="01:00"),
                dict(zones=["terrace"], time="18:00"),
                dict(zones=["terrace"], time="17:59")],
         note="half eleven = 23:30; window 23:30-10:00 across midnight. Terrace 18:00-01:00 benign."),

    dict(id="d41", setting="building site", camera="street side", zones=["hoarding", "footpath"],
         words="Passers-by on the footpath are none of my business. Anyone standing by the hoarding for over 20 "
               "seconds when the site is shut - that's 6pm to 7am and all weekend - alert me.",
         meaning=U(m41),
         cases=[dict(zones=["hoarding"], dwell_s=21, time="18:00"),
                dict(zones=["hoarding"], dwell_s=20, time="18:00"),
                dict(zones=["hoarding"], dwell_s=60, time="06:59"),
                dict(zones=["hoarding"], dwell_s=60, time="07:00"),
                dict(zones=["hoarding"], dwell_s=60, time="12:00", weekday="Sat"),
                dict(zones=["footpath"], dwell_s=600, time="02:00"),
                dict(zones=["footpath", "hoarding"], dwell_s=600, time="02:00"),
                dict(zones=["hoarding"], dwell_s=60, label="dog", time="02:00")],
         note="Shut = 18:00-07:00 any day, or Sat/Sun all day. Someone in both zones is at the hoarding -> alert."),

    dict(id="d42", setting="primary school", camera="front gate", zones=["front gate", "reception door"],
         words="Parents collect between 3 and 3:45, so crowds at the front gate then are fine. Outside that, if more "
               "than five people gather at the front gate, alert.",
         meaning=U(m42),
         cases=[dict(zones=["front gate"], people=20, time="15:00"),
                dict(zones=["front gate"], people=20, time="15:45"),
                dict(zones=["front gate"], people=6, time="09:00"),
                dict(zones=["front gate"], people=5, time="09:00"),
                dict(zones=["front gate"], people=2, time="15:20"),
                dict(zones=["reception door"], people=10, time="09:00")],
         note="3 and 3:45 = 15:00-15:45 every day; anyone at the gate then benign (read 'crowds' loosely)."),

    dict(id="d43", setting="car park", camera="level 1", zones=["level 1"],
         words="Alert me if someone is shouting or fighting in the car park, or if an alarm goes off.",
         refuse="every rule needs facts that do not exist (sound, behaviour)",
         note=""),

    dict(id="d44", setting="hospital", camera="pharmacy", zones=["pharmacy hatch", "waiting area"],
         words="Someone waiting at the pharmacy hatch is normal, unless it's after 8pm and they've been there more "
               "than 15 minutes. Nobody in the waiting area should ever trigger anything.",
         meaning=U(m44),
         cases=[dict(zones=["pharmacy hatch"], time="20:00", dwell_s=901),
                dict(zones=["pharmacy hatch"], time="19:59", dwell_s=2000),
                dict(zones=["pharmacy hatch"], time="03:00", dwell_s=900),
                dict(zones=["pharmacy hatch"], time="05:59", dwell_s=1000),
                dict(zones=["pharmacy hatch"], time="06:00", dwell_s=1000),
                dict(zones=["waiting area"], time="03:00", dwell_s=5000),
                dict(zones=["waiting area"], label="dog")],
         note="'after 8pm' runs to 06:00. Waiting area benign for people ('Nobody')."),

    dict(id="d45", setting="office", camera="kitchen", zones=["kitchen"],
         words="Cleaners come at 7pm on weekdays and leave by 9. Anyone in the kitchen on a weekday evening outside "
               "that is odd - flag it. Weekends the kitchen's closed, alert on anyone.",
         meaning=U(m45),
         cases=[dict(zones=["kitchen"], weekday="Tue", time="18:00"),
                dict(zones=["kitchen"], weekday="Tue", time="19:00"),
                dict(zones=["kitchen"], weekday="Tue", time="20:59"),
                dict(zones=["kitchen"], weekday="Tue", time="21:00"),
                dict(zones=["kitchen"], weekday="Tue", time="22:00"),
                dict(zones=["kitchen"], weekday="Tue", time="12:30"),
                dict(zones=["kitchen"], weekday="Sun", time="12:30")],
         note="Weekday evening 18-22; 19:00-21:00 read as the cleaners' slot -> benign (unsure: could be model)."),

    dict(id="d46", setting="car park", camera="exit barrier", zones=["barrier"],
         words="Any car sitting at the barrier for over 90 seconds is probably stuck, alert. Under 90 seconds, no "
               "alert.",
         meaning=U(m46),
         cases=[dict(zones=["barrier"], label="car", dwell_s=91),
                dict(zones=["barrier"], label="car", dwell_s=90),
                dict(zones=["barrier"], label="car", dwell_s=89.9),
                dict(zones=["barrier"], label="truck", dwell_s=200),
                dict(zones=["barrier"], dwell_s=200)],
         note="Exactly 90 s falls in neither rule -> model."),

    dict(id="d47", setting="home", camera="pool", zones=["pool edge", "lawn"],
         words="Kids alone at the pool are dangerous. If exactly one person is at the pool edge, alert. Two or more "
               "people there is fine - someone's watching.",
         meaning=U(m47),
         cases=[dict(zones=["pool edge"], people=1),
                dict(zones=["pool edge"], people=2),
                dict(zones=["pool edge"], people=5, time="02:00"),
                dict(zones=["lawn"], people=1),
                dict(zones=["pool edge"], label="dog", people=0)],
         note="First sentence is motivation; the count rules decide."),

    dict(id="d48", setting="farm", camera="farm gate", zones=["farm gate"],
         words="Trucks and tractors come through the farm gate all day; that's fine from 6am till 9pm. After 9pm I "
               "want to know about any vehicle or person at the gate.",
         meaning=U(m48),
         cases=[dict(zones=["farm gate"], label="truck", time="06:00"),
                dict(zones=["farm gate"], label="truck", time="20:59"),
                dict(zones=["farm gate"], label="truck", time="21:00"),
                dict(zones=["farm gate"], label="car", time="05:59"),
                dict(zones=["farm gate"], time="23:00"),
                dict(zones=["farm gate"], label="car", time="12:00"),
                dict(zones=["farm gate"], time="12:00"),
                dict(zones=["farm gate"], label="dog", time="23:00")],
         note="'After 9pm' runs to 06:00. Vehicles = car/truck/bus/motorcycle. Cars by day not covered -> model."),

    dict(id="d49", setting="supermarket", camera="car park", zones=["trolley bay", "disabled bays"],
         words="Don't alert on people returning trolleys. A car in the disabled bays is fine. People hanging about "
               "the trolley bay for more than 5 minutes after closing (10pm) should be flagged though.",
         meaning=U(m49),
         cases=[dict(zones=["trolley bay"], time="22:00", dwell_s=301),
                dict(zones=["trolley bay"], time="21:59", dwell_s=900),
                dict(zones=["trolley bay"], time="23:00", dwell_s=300),
                dict(zones=["trolley bay"], time="06:00", dwell_s=900),
                dict(zones=["disabled bays"], label="car", time="03:00"),
                dict(zones=["trolley bay"], time="12:00", dwell_s=10)],
         note="'returning trolleys' cannot be seen in the facts: the product should flag that part; left as model. "
              "'after closing (10pm)' runs to 06:00."),

    dict(id="d50", setting="secondary school", camera="staff car park", zones=["staff car park"],
         words="Teachers can be anywhere. Pupils shouldn't be in the staff car park after 9am. And nobody at all "
               "should be in the staff car park at weekends.",
         meaning=U(m50),
         cases=[dict(zones=["staff car park"], weekday="Sat"),
                dict(zones=["staff car park"], weekday="Sun", time="23:59"),
                dict(zones=["staff car park"], weekday="Mon", time="00:00"),
                dict(zones=["staff car park"], weekday="Tue", time="10:00"),
                dict(zones=["staff car park"], weekday="Sat", label="car")],
         note="Teacher/pupil rules need roles the facts cannot show: product should flag them. Only the weekend "
              "rule compiles (alert)."),

    dict(id="d51", setting="hotel", camera="service yard", zones=["service door", "bins"],
         words="Deliveries use the service door from 6 to 11 in the morning, every day but Sunday. A truck at the "
               "service door then is fine; a truck there at any other time, or on a Sunday, gets an alert. People "
               "at the bins are fine from 7am until midnight.",
         meaning=U(m51),
         cases=[dict(zones=["service door"], label="truck", weekday="Sat", time="06:00"),
                dict(zones=["service door"], label="truck", weekday="Sat", time="11:00"),
                dict(zones=["service door"], label="truck", weekday="Sun", time="08:00"),
                dict(zones=["service door"], label="truck", weekday="Mon", time="05:59"),
                dict(zones=["bins"], time="23:59"),
                dict(zones=["bins"], time="00:00"),
                dict(zones=["bins"], time="07:00"),
                dict(zones=["service door"], time="08:00")],
         note="Bins window 07:00-24:00."),

    dict(id="d52", setting="warehouse", camera="mezzanine", zones=["mezzanine", "stairs"],
         words="Alert on anyone on the mezzanine who isn't in hi-vis and a black or grey top. Visitors get hi-vis "
               "but not our uniform, so they're an alert too.",
         meaning=U(m52),
         cases=[dict(zones=["mezzanine"], hivis=True, upper="black"),
                dict(zones=["mezzanine"], hivis=True, upper="grey"),
                dict(zones=["mezzanine"], hivis=True, upper="orange"),
                dict(zones=["mezzanine"], hivis=False, upper="black"),
                dict(zones=["mezzanine"], hivis=False),
                dict(zones=["mezzanine"], hivis=True),
                dict(zones=["stairs"], hivis=False, upper="red")],
         note="Allowed = hi-vis AND black/grey top; the allowed get no stated verdict (model). Unknown top with "
              "hi-vis -> model; without hi-vis -> alert whatever the top."),

    dict(id="d53", setting="office", camera="bike cage", zones=["bike cage"],
         words="Bikes in and out of the cage are fine between 7am and 7pm. A bike in the cage after 7pm: alert. No "
               "one at all should be in there from 10pm.",
         meaning=U(m53),
         cases=[dict(zones=["bike cage"], label="bicycle", time="07:00"),
                dict(zones=["bike cage"], label="bicycle", time="19:00"),
                dict(zones=["bike cage"], label="bicycle", time="05:59"),
                dict(zones=["bike cage"], label="bicycle", time="06:30"),
                dict(zones=["bike cage"], time="22:00"),
                dict(zones=["bike cage"], time="21:59"),
                dict(zones=["bike cage"], time="12:00")],
         note="'after 7pm' and 'from 10pm' both run to 06:00 (convention 3). Bicycle 06:00-07:00 is then in no "
              "rule -> model."),

    dict(id="d54", setting="farmhouse", camera="kitchen door", zones=["kitchen door", "lane"],
         words="Anyone coming towards the kitchen door at night is an alert unless they're in hi-vis.",
         meaning=U(m54),
         cases=[dict(zones=["kitchen door"], time="22:00", direction="towards"),
                dict(zones=["kitchen door"], time="21:59", direction="towards"),
                dict(zones=["kitchen door"], time="03:00", direction="towards", hivis=True),
                dict(zones=["kitchen door"], time="03:00", direction="away"),
                dict(zones=["kitchen door"], time="03:00"),
                dict(zones=["kitchen door"], time="03:00", direction="towards", hivis=None),
                dict(zones=["lane"], time="03:00", direction="towards")],
         note="At night = 22-06. Unknown direction -> model."),

    dict(id="d55", setting="hospital", camera="A&E entrance", zones=["entrance", "ambulance lane"],
         words="Anyone standing in the ambulance lane is an alert, at any hour, except people in hi-vis. Cars in "
               "the ambulance lane are also an alert; buses and trucks aren't.",
         meaning=U(m55),
         cases=[dict(zones=["ambulance lane"]),
                dict(zones=["ambulance lane"], hivis=True, time="02:00"),
                dict(zones=["ambulance lane"], hivis=None),
                dict(zones=["ambulance lane"], label="car"),
                dict(zones=["ambulance lane"], label="bus"),
                dict(zones=["ambulance lane"], label="truck", time="04:00"),
                dict(zones=["entrance"], label="car"),
                dict(zones=["ambulance lane"], label="motorcycle")],
         note="'standing' not measurable; read as any person in the lane. 'aren't' (an alert) = benign."),

    dict(id="d56", setting="home", camera="side gate", zones=["side gate", "bins"],
         words="Whoever's at the side gate, if they're carrying a backpack or a suitcase and it's between 11pm and "
               "5am, alert. Otherwise leave it.",
         meaning=U(m56),
         cases=[dict(zones=["side gate"], carries=["backpack"], time="23:00"),
                dict(zones=["side gate"], carries=["suitcase"], time="04:59"),
                dict(zones=["side gate"], carries=["suitcase"], time="05:00"),
                dict(zones=["side gate"], time="01:00"),
                dict(zones=["side gate"], carries=["handbag"], time="01:00"),
                dict(zones=["bins"], carries=["backpack"], time="01:00"),
                dict(zones=["side gate"], label="cat", time="01:00")],
         note="'Otherwise leave it' read as a full otherwise: every other event on this camera benign (unsure "
              "whether it covers the bins zone)."),

    dict(id="d57", setting="jewellery shop", camera="front of shop", zones=["counter", "window display"],
         words="Nobody should linger at the window display for more than 45 seconds after we shut at 6. Browsing "
               "while we're open (9 to 6) is fine. Someone at the counter with a knife is always an alert.",
         meaning=U(m57),
         cases=[dict(zones=["window display"], time="18:00", dwell_s=46),
                dict(zones=["window display"], time="18:00", dwell_s=45),
                dict(zones=["window display"], time="17:59", dwell_s=300),
                dict(zones=["window display"], time="05:59", dwell_s=300),
                dict(zones=["window display"], time="08:00", dwell_s=300),
                dict(zones=["counter"], carries=["knife"], time="12:00"),
                dict(zones=["counter"], time="12:00"),
                dict(zones=["window display"], carries=["knife"], time="12:00")],
         note="'after we shut at 6' runs 18:00-06:00; 06:00-09:00 in no rule -> model."),

    dict(id="d58", setting="office", camera="server room", zones=["server room"],
         words="Only one person at a time in the server room. If two or more are in there, alert, but not between "
               "2 and 4am on Sundays, that's maintenance.",
         meaning=U(m58),
         cases=[dict(zones=["server room"], people=1, time="03:00"),
                dict(zones=["server room"], people=2),
                dict(zones=["server room"], people=2, weekday="Sun", time="02:00"),
                dict(zones=["server room"], people=3, weekday="Sun", time="04:00"),
                dict(zones=["server room"], people=2, weekday="Sat", time="03:00"),
                dict(zones=["server room"], label="cat", people=0)],
         note="One person read as allowed (benign). Sunday 02:00-04:00 is Sunday's early hours, not Saturday night."),

    dict(id="d59", setting="distribution centre", camera="main gate", zones=["gate"],
         words="Trucks leaving (driving away from the camera) are fine. A truck coming towards the gate between "
               "8pm and 6am is an alert unless it's a Saturday night.",
         meaning=U(m59),
         cases=[dict(zones=["gate"], label="truck", direction="away", time="02:00"),
                dict(zones=["gate"], label="truck", direction="towards", time="20:00", weekday="Tue"),
                dict(zones=["gate"], label="truck", direction="towards", time="23:00", weekday="Sat"),
                dict(zones=["gate"], label="truck", direction="towards", time="03:00", weekday="Sun"),
                dict(zones=["gate"], label="truck", direction="towards", time="21:00", weekday="Sat"),
                dict(zones=["gate"], label="truck", direction="towards", time="03:00", weekday="Sat"),
                dict(zones=["gate"], label="truck", time="23:00", weekday="Sat"),
                dict(zones=["gate"], label="truck", direction="towards", time="12:00")],
         note="Saturday night = Sat 22:00-Sun 06:00, so Sat 21:00 is still alert and Sat 03:00 (Friday night) alert. "
              "Unknown direction on Saturday night: away/towards both benign, left/right model -> model."),

    dict(id="d60", setting="primary school", camera="roof", zones=["roof", "playground"],
         words="Balls end up on the roof all the time - a sports ball on its own isn't a reason to alert. A person "
               "up there is, though, unless they're in hi-vis and it's a weekday during the day.",
         meaning=U(m60),
         cases=[dict(zones=["roof"], label="sports ball", time="02:00"),
                dict(zones=["roof"]),
                dict(zones=["roof"], hivis=True, weekday="Mon", time="06:00"),
                dict(zones=["roof"], hivis=True, weekday="Mon", time="22:00"),
                dict(zones=["roof"], hivis=True, weekday="Sat", time="12:00"),
                dict(zones=["roof"], hivis=None, weekday="Sun"),
                dict(zones=["roof"], hivis=None, weekday="Tue"),
                dict(zones=["playground"], label="sports ball")],
         note="'during the day' = daytime 06-22. Ball benign (read 'isn't a reason to alert' as benign)."),

    dict(id="d61", setting="hotel", camera="guest car park", zones=["car park", "entrance road"],
         words="From Friday night to Sunday night, alert on anyone in the car park in a black or navy top (navy "
               "shows up as blue).",
         meaning=U(m61),
         cases=[dict(zones=["car park"], weekday="Fri", time="22:00", upper="black"),
                dict(zones=["car park"], weekday="Fri", time="21:59", upper="black"),
                dict(zones=["car park"], weekday="Sat", time="12:00", upper="blue"),
                dict(zones=["car park"], weekday="Mon", time="05:59", upper="blue"),
                dict(zones=["car park"], weekday="Mon", time="06:00", upper="blue"),
                dict(zones=["car park"], weekday="Sun", time="23:00", upper="white"),
                dict(zones=["car park"], weekday="Sun", time="23:00"),
                dict(zones=["entrance road"], weekday="Sat", time="23:00", upper="black")],
         note="Friday night to Sunday night inclusive = Fri 22:00 to Mon 06:00 (unsure: could end Sun 22:00)."),

    dict(id="d62", setting="building site", camera="tool store", zones=["tool store", "compound"],
         words="Flag anyone walking away from the camera at the tool store with a suitcase or a backpack. Anyone "
               "with nothing in their hands is fine.",
         meaning=U(m62),
         cases=[dict(zones=["tool store"], direction="away", carries=["backpack"]),
                dict(zones=["tool store"], direction="towards", carries=["backpack"]),
                dict(zones=["tool store"], carries=["suitcase"]),
                dict(zones=["tool store"], direction="away"),
                dict(zones=["tool store"], direction="away", carries=["bottle"]),
                dict(zones=["compound"], direction="away", carries=["backpack"])],
         note="'nothing in their hands' = carries empty. 'Anyone' sentence scoped to the tool store."),

    dict(id="d63", setting="hospital", camera="staff entrance", zones=["staff door", "smoking shelter"],
         words="The smoking shelter gets people at all hours; leave it alone unless there are more than 4 people or "
               "someone's been there over 20 minutes.",
         meaning=U(m63),
         cases=[dict(zones=["smoking shelter"], people=4, dwell_s=1200),
                dict(zones=["smoking shelter"], people=5),
                dict(zones=["smoking shelter"], people=1, dwell_s=1201, time="03:00"),
                dict(zones=["smoking shelter"], people=2, time="03:00"),
                dict(zones=["staff door"], people=8)],
         note="'leave it alone unless' -> benign unless a trigger; trigger = alert."),

    dict(id="d64", setting="office", camera="front of building", zones=["front steps", "pavement"],
         words="Don't alert on anyone on the pavement. Anyone on the front steps between 7 in the evening and 7 in "
               "the morning who's not moving away from the door is worth an alert.",
         meaning=U(m64),
         cases=[dict(zones=["front steps"], time="19:00", direction="towards"),
                dict(zones=["front steps"], time="18:59", direction="towards"),
                dict(zones=["front steps"], time="06:59", direction="left"),
                dict(zones=["front steps"], time="23:00", direction="away"),
                dict(zones=["front steps"], time="23:00"),
                dict(zones=["pavement"], time="23:00", direction="towards"),
                dict(zones=["pavement", "front steps"], time="23:00", direction="towards")],
         note="Camera over the door: away from the door = 'away'. Left/right count as not moving away. On both "
              "zones the steps rule wins (read as the more specific one; unsure)."),

    dict(id="d65", setting="farm shop", camera="honesty box", zones=["honesty box", "car park"],
         words="People at the honesty box are customers - fine - but not between 8pm and 7am, when it's shut; "
               "alert then. Dogs are fine everywhere.",
         meaning=U(m65),
         cases=[dict(zones=["honesty box"], time="19:59"),
                dict(zones=["honesty box"], time="20:00"),
                dict(zones=["honesty box"], time="06:59"),
                dict(zones=["honesty box"], time="07:00"),
                dict(zones=["car park"], label="dog", time="03:00"),
                dict(zones=["car park"], time="03:00")],
         note=""),

    dict(id="d66", setting="car dealership", camera="forecourt", zones=["forecourt", "showroom door"],
         words="After 8pm and all day Sunday, alert on anyone on the forecourt who isn't wearing hi-vis. Security "
               "wear yellow hi-vis; if someone's in hi-vis but their top is any other colour, alert anyway.",
         meaning=U(m66),
         cases=[dict(zones=["forecourt"], time="20:00"),
                dict(zones=["forecourt"], time="19:59"),
                dict(zones=["forecourt"], time="12:00", weekday="Sun"),
                dict(zones=["forecourt"], time="23:00", hivis=True, upper="yellow"),
                dict(zones=["forecourt"], time="23:00", hivis=True, upper="orange"),
                dict(zones=["forecourt"], time="23:00", hivis=True),
                dict(zones=["forecourt"], time="05:59", hivis=None, upper="yellow"),
                dict(zones=["showroom door"], time="23:00")],
         note="Yellow hi-vis gets no stated verdict (model). Hi-vis with unknown top -> model."),

    dict(id="d67", setting="home", camera="driveway", zones=["driveway", "charger"],
         words="My car is the only one that should be at the charger. Since I can't tell you which car is mine, "
               "just alert on any car at the charger that's been there over 4 hours between midnight and 6am.",
         meaning=U(m67),
         cases=[dict(zones=["charger"], label="car", time="03:00", dwell_s=14401),
                dict(zones=["charger"], label="car", time="03:00", dwell_s=14400),
                dict(zones=["charger"], label="car", time="06:00", dwell_s=20000),
                dict(zones=["charger"], label="car", time="00:00", dwell_s=20000),
                dict(zones=["driveway"], label="car", time="03:00", dwell_s=20000),
                dict(zones=["charger"], time="03:00", dwell_s=20000)],
         note="The writer gives up on identity; only the dwell rule compiles."),

    dict(id="d68", setting="secondary school", camera="playground", zones=["playground", "bike rack"],
         words="Our uniform is a green jumper with grey trousers. In school hours (8:45 to 3:15 on weekdays) "
               "anyone in the playground not in green on top and grey on the bottom gets an alert. Those in "
               "uniform are fine.",
         meaning=U(m68),
         cases=[dict(zones=["playground"], upper="green", lower="grey", time="08:45"),
                dict(zones=["playground"], upper="green", lower="black", time="10:00"),
                dict(zones=["playground"], upper="red", time="10:00"),
                dict(zones=["playground"], lower="grey", time="10:00"),
                dict(zones=["playground"], upper="green", lower="grey", time="15:15"),
                dict(zones=["playground"], upper="blue", lower="grey", time="15:14"),
                dict(zones=["playground"], upper="blue", lower="blue", weekday="Sat"),
                dict(zones=["bike rack"], upper="red", time="10:00")],
         note="Unknown top with grey trousers -> model; a red top already fails the uniform -> alert."),

    dict(id="d69", setting="hotel", camera="lift lobby", zones=["lift lobby", "fire exit"],
         words="The fire exit isn't an entrance. Alert on any person at it, no matter when, other than during the "
               "alarm test between 11 and 11:30 on Mondays.",
         meaning=U(m69),
         cases=[dict(zones=["fire exit"], weekday="Mon", time="11:00"),
                dict(zones=["fire exit"], weekday="Mon", time="11:30"),
                dict(zones=["fire exit"], weekday="Tue", time="11:15"),
                dict(zones=["fire exit"], weekday="Mon", time="10:59"),
                dict(zones=["lift lobby"], weekday="Mon", time="03:00"),
                dict(zones=["fire exit"], label="cat")],
         note="11 = 11am (test in the working day). 'other than' exception -> benign."),

    dict(id="d70", setting="warehouse", camera="perimeter", zones=["fence", "car park"],
         words="Nobody should be along the fence from Saturday 2pm to Monday 6am. Apart from that, people walking "
               "along the fence (left or right) are OK, but anyone standing there for more than a minute is not.",
         meaning=U(m70),
         cases=[dict(zones=["fence"], weekday="Sat", time="14:00", direction="left"),
                dict(zones=["fence"], weekday="Sat", time="13:59", direction="left"),
                dict(zones=["fence"], weekday="Mon", time="05:59", direction="right"),
                dict(zones=["fence"], weekday="Mon", time="06:00", direction="right"),
                dict(zones=["fence"], weekday="Wed", dwell_s=61, direction="left"),
                dict(zones=["fence"], weekday="Wed", dwell_s=60, direction="towards"),
                dict(zones=["fence"], weekday="Wed"),
                dict(zones=["car park"], weekday="Sun")],
         note="Weekend span Sat 14:00-Mon 06:00 alert; otherwise >60 s alert, left/right benign; 'but' lets the "
              "dwell rule win."),
]
