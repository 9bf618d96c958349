"""Blind policy test set for edgetriage.

Written by a helper session that has read only SPEC.md in this folder (no product code,
no tests, no benches).  Each entry's `meaning(f)` is a careful operator's reading of
`words`, applied to a full facts dict (defaults filled in).  See policies_blind.md.
"""

# ---------------------------------------------------------------- helpers (plain Python)

def _m(t):
    """'HH:MM' -> minutes since midnight ('24:00' allowed as an end bound)."""
    h, mm = t.split(":")
    return int(h) * 60 + int(mm)


def within(t, a, b):
    """Time window a-b: includes a, excludes b; wraps past midnight when b <= a."""
    x, s, e = _m(t), _m(a), _m(b)
    if s < e:
        return s <= x < e
    return x >= s or x < e


WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri")
WEEKEND = ("Sat", "Sun")
_NEXT = {"Mon": "Tue", "Tue": "Wed", "Wed": "Thu", "Thu": "Fri", "Fri": "Sat", "Sat": "Sun", "Sun": "Mon"}


def night_of(f, days):
    """The named night(s) of the given evening(s): day 22:00 -> next day 06:00."""
    t, d = f["time"], f["weekday"]
    if d in days and within(t, "22:00", "24:00"):
        return True
    return any(_NEXT[x] == d for x in days) and within(t, "00:00", "06:00")


def night(t):
    return within(t, "22:00", "06:00")


def daytime(t):
    return within(t, "06:00", "22:00")


def person(f):
    return f["label"] == "person"


def Z(f, *names):
    """Object stands in any of the named zones."""
    return any(n in f["zones"] for n in names)


# ---------------------------------------------------------------- meanings needing several lines

def _b04(f):
    hours = f["weekday"] in WEEKDAYS and within(f["time"], "07:30", "17:00")
    if hours:
        if person(f) and Z(f, "compound"):
            return {False: "alert", True: "benign", None: "model"}[f["hivis"]]
        return "benign"
    if person(f) and Z(f, "compound"):
        return "alert"
    return "model"


def _b14(f):
    if person(f) and Z(f, "scaffold"):
        if within(f["time"], "18:00", "07:00"):
            return "alert"
        return {False: "alert", True: "benign", None: "model"}[f["hivis"]]
    return "benign"


def _b20(f):
    hours = f["weekday"] in WEEKDAYS and within(f["time"], "09:00", "17:00")
    if not person(f):
        return "model"
    if hours:
        return "benign" if Z(f, "waiting area") else "model"
    if Z(f, "waiting area", "reception desk"):
        return "alert"
    return "model"


def _b21(f):
    if not (person(f) and Z(f, "fence line")):
        return "model"
    if f["weekday"] in WEEKEND or f["hivis"] is False:
        return "alert"
    if f["hivis"] is True:
        return "benign"
    return "model"  # weekday, hi-vis cannot be told


def _b29(f):
    if not person(f):
        return "model"
    if f["weekday"] in WEEKEND:
        return "alert"
    if f["hivis"] is True:
        return "benign"
    if Z(f, "mezzanine"):
        return "alert" if f["hivis"] is False else "model"
    return "model"


def _b31(f):
    hours = f["weekday"] in WEEKDAYS and within(f["time"], "08:30", "15:15")
    if hours:
        if person(f) and Z(f, "front gate") and f["dwell_s"] > 300:
            return "alert"
        return "benign"
    if person(f) and Z(f, "playground"):
        return "alert"
    return "model"


def _b33(f):
    if person(f) and Z(f, "terrace"):
        return "benign" if within(f["time"], "07:00", "20:00") else "alert"
    if person(f) and Z(f, "roof hatch", "plant room"):
        return "alert" if f["hivis"] is False else "model"
    return "model"


def _b37(f):
    if not (person(f) and Z(f, "side entrance") and within(f["time"], "23:00", "06:00")):
        return "benign"
    u, l = f["upper"], f["lower"]
    if (u is not None and u != "black") or (l is not None and l != "black"):
        return "benign"
    if u == "black" and l == "black":
        return "alert"
    return "model"


def _b38(f):
    if not (person(f) and Z(f, "excavation")):
        return "benign"
    if f["hivis"] is False or f["people"] == 1:
        return "alert"
    if f["hivis"] is True:
        return "benign"
    return "model"


def _b39(f):
    if f["weekday"] in WEEKEND:
        return "alert" if person(f) and Z(f, "back garden") else "model"
    if person(f) and Z(f, "back garden") and "knife" in f["carries"]:
        return "alert"
    return "benign"


def _b42(f):
    if not (person(f) and Z(f, "boardroom")):
        return "model"
    if f["weekday"] in WEEKEND:
        return "alert"
    if within(f["time"], "18:00", "22:00"):
        return "alert"
    if within(f["time"], "06:00", "18:00"):
        return "benign"
    return "model"


def _b45(f):
    if f["label"] == "car":
        return "benign"
    if person(f) and Z(f, "parking bays", "trolley shelter"):
        return "benign" if within(f["time"], "07:00", "22:00") else "alert"
    return "model"


def _b48(f):
    if not Z(f, "site entrance"):
        return "model"
    if f["label"] == "truck":
        d, t = f["weekday"], f["time"]
        ok = (d in WEEKDAYS and within(t, "08:00", "16:00")) or (d == "Sat" and within(t, "08:00", "12:00"))
        return "benign" if ok else "alert"
    if person(f):
        return {True: "benign", False: "alert", None: "model"}[f["hivis"]]
    return "model"


def _b53(f):
    if not (person(f) and Z(f, "sports hall") and f["people"] > 5 and within(f["time"], "18:00", "06:00")):
        return "model"
    if f["weekday"] in ("Tue", "Thu") and within(f["time"], "18:00", "22:00"):
        return "benign"
    return "alert"


def _b56(f):
    if not (person(f) and Z(f, "revolving door")):
        return "model"
    if f["direction"] == "away":
        return "benign"
    if f["direction"] == "towards":
        if f["weekday"] in WEEKEND:
            return "alert"
        if within(f["time"], "20:00", "06:00"):
            return "alert"
    return "model"


def _b57(f):
    if f["label"] == "horse" and Z(f, "yard"):
        return "benign"
    if person(f) and Z(f, "tack room") and f["weekday"] in WEEKDAYS:
        t = f["time"]
        if within(t, "00:00", "07:00") or within(t, "20:00", "24:00"):
            return "alert"
    return "model"


def _b61(f):
    if not (Z(f, "plant yard") and within(f["time"], "19:00", "06:30")):
        return "model"
    if f["label"] in ("car", "truck"):
        return "alert"
    if person(f):
        return {True: "benign", False: "alert", None: "model"}[f["hivis"]]
    return "model"


def _b62(f):
    if not (person(f) and Z(f, "school gate")):
        return "model"
    if f["direction"] == "towards":
        return "benign"
    if (f["direction"] == "away" and f["weekday"] in WEEKDAYS
            and within(f["time"], "09:00", "15:30") and f["upper"] == "green"):
        return "alert"
    return "model"


def _b64(f):
    if not (person(f) and Z(f, "front door")):
        return "model"
    if within(f["time"], "07:00", "22:00"):
        return "benign"
    return "alert" if f["direction"] == "towards" else "model"


def _b66(f):
    if f["label"] == "truck" and Z(f, "delivery door"):
        ok = f["weekday"] in ("Mon", "Thu") and within(f["time"], "06:00", "12:00")
        return "benign" if ok else "alert"
    if person(f) and Z(f, "bins"):
        return "benign"
    return "model"


def _b68(f):
    if not (person(f) and Z(f, "front step")):
        return "model"
    if f["dwell_s"] < 120:
        return "benign"
    return "alert" if within(f["time"], "20:00", "08:00") else "model"


def _b70(f):
    if not (person(f) and Z(f, "open plan", "kitchen")
            and f["weekday"] in WEEKDAYS and within(f["time"], "18:00", "20:00")):
        return "model"
    if f["upper"] == "purple":
        return "benign"
    if f["upper"] is None:
        return "model"
    return "alert"


# ---------------------------------------------------------------- the set

BLIND = [
    dict(
        id="b01", setting="warehouse", camera="dock",
        zones=["loading dock", "office door"],
        words="Alert if anybody on the loading dock isn't wearing a hi-vis vest. Nothing else needs an alert.",
        meaning=lambda f: (("alert" if f["hivis"] is False else "benign" if f["hivis"] is True else "model")
                           if person(f) and Z(f, "loading dock") else "benign"),
        cases=[dict(zones=["loading dock"], hivis=False), dict(zones=["loading dock"], hivis=True),
               dict(zones=["loading dock"], hivis=None, time="23:30"), dict(zones=["office door"], hivis=False),
               dict(zones=[], hivis=False), dict(zones=["loading dock"], label="truck", hivis=False),
               dict(zones=["loading dock", "office door"], hivis=False)],
        note="hi-vis False/True/None on the dock, other zone, no zone, a truck, two zones at once",
    ),
    dict(
        id="b02", setting="home", camera="front door",
        zones=["porch", "driveway", "pavement"],
        words="Let me know if someone's on the porch after 10pm. Cars on the driveway are never a problem.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "porch") and within(f["time"], "22:00", "06:00")
                           else "benign" if f["label"] == "car" and Z(f, "driveway") else "model"),
        cases=[dict(zones=["porch"], time="22:00"), dict(zones=["porch"], time="21:59"),
               dict(zones=["porch"], time="00:00"), dict(zones=["porch"], time="05:59"),
               dict(zones=["porch"], time="06:00"), dict(zones=["driveway"], label="car", time="23:00"),
               dict(zones=["driveway"], time="23:00"), dict(zones=["porch"], label="dog", time="23:00"),
               dict(zones=["porch"], label="car", time="23:00")],
        note="'after 10pm' runs 22:00-06:00 across midnight; car exemption only on the driveway; no default",
    ),
    dict(
        id="b03", setting="shop", camera="stockroom",
        zones=["till", "entrance", "stockroom door"],
        words=("Alert if anyone goes through the stockroom door who isn't wearing our red staff shirt. "
               "Staff in red shirts are fine there."),
        meaning=lambda f: (("benign" if f["upper"] == "red" else "model" if f["upper"] is None else "alert")
                           if person(f) and Z(f, "stockroom door") else "model"),
        cases=[dict(zones=["stockroom door"], upper="blue"), dict(zones=["stockroom door"], upper="red"),
               dict(zones=["stockroom door"], upper=None), dict(zones=["stockroom door"], upper="orange"),
               dict(zones=["till"], upper="blue"), dict(zones=["entrance"], upper="red"),
               dict(zones=["stockroom door"], label="dog")],
        note="upper colour red / other / unknown at the stockroom door; the red exemption is local to that door",
    ),
    dict(
        id="b04", setting="building site", camera="gate",
        zones=["site gate", "compound", "road"],
        words=("Nobody should be inside the compound outside working hours, which are 7:30am to 5pm Monday to Friday. "
               "During working hours, alert only if someone in the compound has no hi-vis on."),
        meaning=_b04,
        cases=[dict(weekday="Mon", time="07:29", zones=["compound"], hivis=True),
               dict(weekday="Mon", time="07:30", zones=["compound"], hivis=True),
               dict(weekday="Mon", time="07:30", zones=["compound"], hivis=False),
               dict(weekday="Fri", time="16:59", zones=["compound"], hivis=None),
               dict(weekday="Fri", time="17:00", zones=["compound"], hivis=True),
               dict(weekday="Sat", time="10:00", zones=["compound"], hivis=True),
               dict(weekday="Wed", time="10:00", zones=["road"], hivis=False),
               dict(weekday="Sat", time="10:00", zones=["road"]),
               dict(weekday="Wed", time="10:00", zones=["compound"], label="truck")],
        note="working-hours edges 07:30/17:00, Saturday outside hours, 'only' gives benign default inside hours only",
    ),
    dict(
        id="b05", setting="office", camera="lifts",
        zones=["reception", "lift lobby"],
        words="Between 19:00 and 07:00, alert on anyone in the lift lobby.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "lift lobby") and within(f["time"], "19:00", "07:00")
                           else "model"),
        cases=[dict(zones=["lift lobby"], time="19:00"), dict(zones=["lift lobby"], time="18:59"),
               dict(zones=["lift lobby"], time="00:00"), dict(zones=["lift lobby"], time="06:59"),
               dict(zones=["lift lobby"], time="07:00"), dict(zones=["reception"], time="23:00"),
               dict(zones=["lift lobby"], time="23:00", label="dog")],
        note="wrapping window 19:00-07:00 edges, other zone, non-person; no default",
    ),
    dict(
        id="b06", setting="home", camera="back garden",
        zones=["lawn", "shed", "patio"],
        words=("Don't alert for the dog or the cat, ever. Anyone near the shed at night should be flagged. "
               "Everything else is fine."),
        meaning=lambda f: ("benign" if f["label"] in ("dog", "cat")
                           else "alert" if person(f) and Z(f, "shed") and night(f["time"]) else "benign"),
        cases=[dict(zones=["shed"], label="dog", time="23:00"), dict(zones=["shed"], label="cat", time="02:00"),
               dict(zones=["shed"], time="22:00"), dict(zones=["shed"], time="21:59"),
               dict(zones=["shed"], time="05:59"), dict(zones=["shed"], time="06:00"),
               dict(zones=["lawn"], time="23:00"), dict(zones=["shed"], label="fox", time="23:00")],
        note="night 22:00-06:00 edges, pets never alert, fox is not 'anyone' and falls to 'everything else is fine'",
    ),
    dict(
        id="b07", setting="school", camera="playground",
        zones=["playground", "staff car park", "gate"],
        words="Alert if anyone is in the playground at the weekend. During the week it's fine.",
        meaning=lambda f: ("benign" if f["weekday"] in WEEKDAYS
                           else "alert" if person(f) and Z(f, "playground") else "model"),
        cases=[dict(weekday="Sat", time="00:00", zones=["playground"]),
               dict(weekday="Fri", time="23:59", zones=["playground"]),
               dict(weekday="Sun", time="23:59", zones=["playground"]),
               dict(weekday="Mon", time="00:00", zones=["playground"]),
               dict(weekday="Sat", zones=["playground"], label="dog"),
               dict(weekday="Sun", zones=["gate"]), dict(weekday="Wed", zones=["playground"])],
        note="weekend is calendar Sat/Sun (Fri 23:59 and Mon 00:00 outside); weekdays benign; dog/gate at weekend to model",
    ),
    dict(
        id="b08", setting="farm", camera="yard",
        zones=["yard", "barn", "lane"],
        words=("Tell me if a car or truck is in the yard between half past nine at night and six in the morning. "
               "Never alert for dogs or sheep."),
        meaning=lambda f: ("benign" if f["label"] in ("dog", "sheep")
                           else "alert" if f["label"] in ("car", "truck") and Z(f, "yard")
                           and within(f["time"], "21:30", "06:00") else "model"),
        cases=[dict(label="car", zones=["yard"], time="21:30"), dict(label="car", zones=["yard"], time="21:29"),
               dict(label="truck", zones=["yard"], time="05:59"), dict(label="car", zones=["yard"], time="06:00"),
               dict(label="truck", zones=["yard"], time="00:00"), dict(label="car", zones=["lane"], time="23:00"),
               dict(zones=["yard"], time="23:00"), dict(label="dog", zones=["yard"], time="23:00"),
               dict(label="sheep", zones=["barn"], time="12:00")],
        note="21:30-06:00 window in words, vehicle labels only, dogs/sheep benign everywhere, person to model",
    ),
    dict(
        id="b09", setting="car park", camera="pay station",
        zones=["level 1", "ramp", "pay machine"],
        words=("Alert if more than two people are standing around the pay machine for longer than 90 seconds. "
               "Otherwise, no alert."),
        meaning=lambda f: ("alert" if Z(f, "pay machine") and f["people"] > 2 and f["dwell_s"] > 90 else "benign"),
        cases=[dict(zones=["pay machine"], people=3, dwell_s=90.1), dict(zones=["pay machine"], people=3, dwell_s=90.0),
               dict(zones=["pay machine"], people=2, dwell_s=200.0),
               dict(zones=["pay machine", "ramp"], people=3, dwell_s=91.0),
               dict(zones=["ramp"], people=3, dwell_s=200.0), dict(zones=["pay machine"], people=5, dwell_s=300.0),
               dict(zones=["pay machine"], people=1, dwell_s=600.0)],
        note="people > 2 and dwell > 90 strict on both sides, zone in/out, explicit benign default",
    ),
    dict(
        id="b10", setting="home", camera="back gate", zones=["back gate"],
        words="Alert on anyone at the back gate between 22:00 and 25:00.",
        refuse="impossible time", cases=[],
        note="25:00 is not a clock time",
    ),
    dict(
        id="b11", setting="shop", camera="jewellery counter",
        zones=["counter", "door", "window display"],
        words=("Alert immediately if anyone at the counter is carrying a knife, at any time. "
               "Otherwise leave it to judgement."),
        meaning=lambda f: ("alert" if person(f) and Z(f, "counter") and "knife" in f["carries"] else "model"),
        cases=[dict(zones=["counter"], carries=["knife"]), dict(zones=["counter"], carries=["knife", "bottle"]),
               dict(zones=["counter"], carries=["bottle"]), dict(zones=["door"], carries=["knife"]),
               dict(zones=["counter"], carries=["knife"], time="03:00", weekday="Sun"),
               dict(zones=["counter"], carries=[]), dict(zones=["counter", "door"], carries=["knife"])],
        note="knife among other objects, other zone, night/Sunday irrelevant, explicit model default",
    ),
    dict(
        id="b12", setting="warehouse", camera="forklift bay",
        zones=["aisle 1", "aisle 2", "forklift bay"],
        words=("People are not allowed in the forklift bay unless they're wearing hi-vis. "
               "Trucks and forklifts in the bay are fine."),
        meaning=lambda f: ("benign" if f["label"] in ("truck", "forklift") and Z(f, "forklift bay")
                           else ({False: "alert", True: "benign", None: "model"}[f["hivis"]])
                           if person(f) and Z(f, "forklift bay") else "model"),
        cases=[dict(zones=["forklift bay"], hivis=False), dict(zones=["forklift bay"], hivis=True),
               dict(zones=["forklift bay"], hivis=None, time="02:00"), dict(zones=["aisle 1"], hivis=False),
               dict(zones=["forklift bay"], label="truck"), dict(zones=["forklift bay"], label="forklift"),
               dict(zones=["forklift bay"], hivis=False, time="03:00"), dict(zones=["forklift bay"], label="dog")],
        note="'not allowed unless hi-vis': no hi-vis alert, hi-vis allowed (benign), unknown model; vehicles fine",
    ),
    dict(
        id="b13", setting="office", camera="server room",
        zones=["server room", "corridor"],
        words=("Nobody should be in the server room after 7pm or before 7 in the morning, and never at weekends. "
               "Otherwise it's fine."),
        meaning=lambda f: ("alert" if person(f) and Z(f, "server room")
                           and (f["weekday"] in WEEKEND or within(f["time"], "19:00", "07:00")) else "benign"),
        cases=[dict(zones=["server room"], time="18:59"), dict(zones=["server room"], time="19:00"),
               dict(zones=["server room"], time="06:59"), dict(zones=["server room"], time="07:00"),
               dict(zones=["server room"], weekday="Sat"), dict(zones=["server room"], weekday="Sun", time="15:00"),
               dict(zones=["server room"], weekday="Mon"), dict(zones=["corridor"], time="23:00"),
               dict(zones=["server room"], time="23:00", label="cat")],
        note="after 19:00 / before 07:00 union, weekend all day, benign default, cat is not 'nobody'",
    ),
    dict(
        id="b14", setting="building site", camera="scaffold",
        zones=["scaffold", "skip", "hoarding"],
        words=("Alert on anyone on the scaffold who isn't in hi-vis, and on anyone at all on the scaffold "
               "between 6pm and 7am. Nothing else."),
        meaning=_b14,
        cases=[dict(zones=["scaffold"], hivis=False), dict(zones=["scaffold"], hivis=True),
               dict(zones=["scaffold"], hivis=None), dict(zones=["scaffold"], hivis=True, time="18:00"),
               dict(zones=["scaffold"], hivis=True, time="17:59"), dict(zones=["scaffold"], hivis=None, time="06:59"),
               dict(zones=["scaffold"], hivis=True, time="07:00"), dict(zones=["skip"], hivis=False),
               dict(zones=["scaffold"], hivis=None, time="23:00")],
        note="two alert sentences that overlap without conflict; hi-vis unknown decided by the night window",
    ),
    dict(
        id="b15", setting="home", camera="driveway",
        zones=["driveway", "front lawn", "street"],
        words=("Cars parking on the driveway are expected. A person walking up the driveway towards the house "
               "in the evening or at night should trigger an alert. People walking past along the street, "
               "left or right, are fine."),
        meaning=lambda f: ("benign" if f["label"] == "car" and Z(f, "driveway")
                           else "alert" if person(f) and Z(f, "driveway") and f["direction"] == "towards"
                           and within(f["time"], "18:00", "06:00")
                           else "benign" if person(f) and Z(f, "street") and f["direction"] in ("left", "right")
                           else "model"),
        cases=[dict(label="car", zones=["driveway"], time="23:00"),
               dict(zones=["driveway"], direction="towards", time="18:00"),
               dict(zones=["driveway"], direction="towards", time="17:59"),
               dict(zones=["driveway"], direction="towards", time="05:59"),
               dict(zones=["driveway"], direction="towards", time="06:00"),
               dict(zones=["driveway"], direction="away", time="23:00"),
               dict(zones=["street"], direction="left", time="23:00"),
               dict(zones=["street"], direction="towards", time="23:00"),
               dict(label="car", zones=["street"], time="23:00")],
        note="evening+night = 18:00-06:00, direction towards vs away, lateral walkers fine only on the street",
    ),
    dict(
        id="b16", setting="shop", camera="entrance",
        zones=["entrance", "aisles"],
        words="Alert if a group of four or more comes in through the entrance after 8pm.",
        meaning=lambda f: ("alert" if Z(f, "entrance") and f["people"] >= 4 and f["direction"] == "towards"
                           and within(f["time"], "20:00", "06:00") else "model"),
        cases=[dict(zones=["entrance"], people=4, direction="towards", time="20:00"),
               dict(zones=["entrance"], people=3, direction="towards", time="20:00"),
               dict(zones=["entrance"], people=4, direction="towards", time="19:59"),
               dict(zones=["entrance"], people=4, direction="away", time="21:00"),
               dict(zones=["entrance"], people=6, direction="towards", time="05:59"),
               dict(zones=["entrance"], people=4, direction="towards", time="06:00"),
               dict(zones=["aisles"], people=4, direction="towards", time="21:00")],
        note="'four or more' is >= 4, 'comes in' is direction towards, 'after 8pm' to 06:00",
    ),
    dict(
        id="b17", setting="office", camera="bike shed",
        zones=["bay row A", "barrier", "bike shed"],
        words=("Bicycles at the bike shed are fine. Alert on any person at the bike shed who stays more than "
               "2 minutes, except between 8 and half past 9 in the morning."),
        meaning=lambda f: ("benign" if f["label"] == "bicycle" and Z(f, "bike shed")
                           else ("benign" if within(f["time"], "08:00", "09:30") else "alert")
                           if person(f) and Z(f, "bike shed") and f["dwell_s"] > 120 else "model"),
        cases=[dict(label="bicycle", zones=["bike shed"], dwell_s=5000.0),
               dict(zones=["bike shed"], dwell_s=120.1), dict(zones=["bike shed"], dwell_s=120.0),
               dict(zones=["bike shed"], dwell_s=120.1, time="08:00"),
               dict(zones=["bike shed"], dwell_s=500.0, time="09:29"),
               dict(zones=["bike shed"], dwell_s=500.0, time="09:30"),
               dict(zones=["bike shed"], dwell_s=500.0, time="07:59"),
               dict(zones=["barrier"], dwell_s=300.0)],
        note="dwell > 120 strict, 'except' window 08:00-09:30 gives no alert (benign)",
    ),
    dict(
        id="b18", setting="farm", camera="hen house",
        zones=["chicken run", "paddock", "farmhouse door"],
        words=("Foxes and dogs in the chicken run: alert straight away, day or night. People in the chicken run "
               "are fine during the daytime; at night, tell me."),
        meaning=lambda f: ("alert" if f["label"] in ("fox", "dog") and Z(f, "chicken run")
                           else ("benign" if daytime(f["time"]) else "alert")
                           if person(f) and Z(f, "chicken run") else "model"),
        cases=[dict(label="fox", zones=["chicken run"], time="12:00"),
               dict(label="dog", zones=["chicken run"], time="03:00"),
               dict(zones=["chicken run"], time="21:59"), dict(zones=["chicken run"], time="22:00"),
               dict(zones=["chicken run"], time="05:59"), dict(zones=["chicken run"], time="06:00"),
               dict(label="fox", zones=["paddock"], time="03:00"), dict(label="cat", zones=["chicken run"]),
               dict(zones=["paddock"], time="23:00")],
        note="daytime 06:00-22:00 vs night for people; animals any time; cat not named",
    ),
    dict(
        id="b19", setting="home", camera="front door", zones=["front door"],
        words="Alert whenever anyone is at the front door. Nobody at the front door should ever cause an alert.",
        refuse="contradiction", cases=[],
        note="both sentences cover every person at the front door with opposite verdicts",
    ),
    dict(
        id="b20", setting="office", camera="reception",
        zones=["reception desk", "front door", "waiting area"],
        words=("Between 9 and 5 on weekdays, visitors in the waiting area are fine. Outside those hours, alert "
               "if anyone is in the waiting area or at the reception desk."),
        meaning=_b20,
        cases=[dict(weekday="Wed", time="09:00", zones=["waiting area"]),
               dict(weekday="Wed", time="08:59", zones=["waiting area"]),
               dict(weekday="Wed", time="16:59", zones=["waiting area"]),
               dict(weekday="Wed", time="17:00", zones=["waiting area"]),
               dict(weekday="Sat", time="12:00", zones=["waiting area"]),
               dict(weekday="Wed", time="12:00", zones=["reception desk"]),
               dict(weekday="Wed", time="20:00", zones=["reception desk"]),
               dict(weekday="Wed", time="20:00", zones=["front door"]),
               dict(weekday="Sun", time="10:00", zones=["front door"])],
        note="'between 9 and 5' = 09:00-17:00 Mon-Fri; reception desk in hours undecided",
    ),
    dict(
        id="b21", setting="warehouse", camera="perimeter",
        zones=["yard", "fence line", "gatehouse"],
        words=("Anyone along the fence line at any time is an alert, unless they're wearing hi-vis and "
               "it's a weekday."),
        meaning=_b21,
        cases=[dict(weekday="Wed", zones=["fence line"], hivis=True),
               dict(weekday="Wed", zones=["fence line"], hivis=False),
               dict(weekday="Sat", zones=["fence line"], hivis=True),
               dict(weekday="Fri", time="23:00", zones=["fence line"], hivis=None),
               dict(weekday="Sun", time="02:00", zones=["fence line"], hivis=None),
               dict(weekday="Mon", time="03:00", zones=["fence line"], hivis=True),
               dict(weekday="Wed", zones=["yard"], hivis=False),
               dict(weekday="Wed", zones=["fence line"], label="dog")],
        note="exception needs both hi-vis and weekday; unknown hi-vis still alerts at the weekend",
    ),
    dict(
        id="b22", setting="shop", camera="cash machine",
        zones=["atm", "lobby"],
        words=("Alert if someone spends at least 3 minutes at the atm, or if more than one person is at it "
               "at night."),
        meaning=lambda f: ("alert" if Z(f, "atm") and person(f)
                           and (f["dwell_s"] >= 180 or (f["people"] > 1 and night(f["time"]))) else "model"),
        cases=[dict(zones=["atm"], dwell_s=180.0), dict(zones=["atm"], dwell_s=179.9),
               dict(zones=["atm"], people=2, time="22:00"), dict(zones=["atm"], people=2, time="21:59"),
               dict(zones=["atm"], people=2, time="05:59"), dict(zones=["atm"], people=2, time="06:00"),
               dict(zones=["atm"], people=1, time="23:00", dwell_s=10.0), dict(zones=["lobby"], dwell_s=300.0)],
        note="'at least' is >=, night 22:00-06:00 with count > 1, no default",
    ),
    dict(
        id="b23", setting="home", camera="pool",
        zones=["pool", "pool gate", "deck"],
        words=("Alert if someone is at the pool on their own for more than 20 seconds. "
               "Two or more people at the pool is fine."),
        meaning=lambda f: ("benign" if Z(f, "pool") and f["people"] >= 2
                           else "alert" if person(f) and Z(f, "pool") and f["people"] == 1 and f["dwell_s"] > 20
                           else "model"),
        cases=[dict(zones=["pool"], people=1, dwell_s=20.1), dict(zones=["pool"], people=1, dwell_s=20.0),
               dict(zones=["pool"], people=2, dwell_s=100.0), dict(zones=["pool"], people=3, dwell_s=5.0),
               dict(zones=["pool gate"], people=1, dwell_s=100.0),
               dict(zones=["pool"], people=1, dwell_s=100.0, label="dog"),
               dict(zones=["pool gate"], people=2, dwell_s=100.0)],
        note="'on their own' = people == 1, dwell > 20 strict, group fine only at the pool",
    ),
    dict(
        id="b24", setting="building site", camera="stores",
        zones=["crane base", "site office", "stores"],
        words="Only alert for people at the stores container between 8pm and 6am, but not for foxes or cats.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "stores") and within(f["time"], "20:00", "06:00")
                           else "benign"),
        cases=[dict(zones=["stores"], time="20:00"), dict(zones=["stores"], time="19:59"),
               dict(zones=["stores"], time="05:59"), dict(zones=["stores"], time="06:00"),
               dict(zones=["stores"], time="00:00"), dict(zones=["site office"], time="23:00"),
               dict(zones=["stores"], label="fox", time="23:00"), dict(zones=["stores"], label="car", time="23:00")],
        note="'only' gives benign for everything else, including a car",
    ),
    dict(
        id="b25", setting="office", camera="turnstiles",
        zones=["lobby", "turnstiles"],
        words="Alert for anyone at the turnstiles carrying a suitcase or a backpack on a Sunday.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "turnstiles") and f["weekday"] == "Sun"
                           and ("suitcase" in f["carries"] or "backpack" in f["carries"]) else "model"),
        cases=[dict(weekday="Sun", zones=["turnstiles"], carries=["suitcase"]),
               dict(weekday="Sun", zones=["turnstiles"], carries=["backpack"]),
               dict(weekday="Sun", zones=["turnstiles"], carries=["handbag"]),
               dict(weekday="Sat", zones=["turnstiles"], carries=["suitcase"]),
               dict(weekday="Sun", time="00:00", zones=["turnstiles"], carries=["backpack"]),
               dict(weekday="Sun", time="23:59", zones=["turnstiles"], carries=["suitcase"]),
               dict(weekday="Mon", time="00:00", zones=["turnstiles"], carries=["suitcase"]),
               dict(weekday="Sun", zones=["lobby"], carries=["suitcase"])],
        note="either object, Sunday calendar day edges, handbag not named",
    ),
    dict(
        id="b26", setting="warehouse", camera="loading bay", zones=["loading bay"],
        words="Alert if someone lingers at the loading bay for less than 10 seconds but more than a minute.",
        refuse="never true", cases=[],
        note="dwell < 10 and dwell > 60 can never both hold",
    ),
    dict(
        id="b27", setting="home", camera="side",
        zones=["side passage", "bins"],
        words=("Bin day is Tuesday: anyone at the bins on Tuesday morning is fine. Anyone in the side passage "
               "at night, alert me. Anyone else, use your judgement."),
        meaning=lambda f: ("alert" if person(f) and Z(f, "side passage") and night(f["time"])
                           else "benign" if person(f) and Z(f, "bins") and f["weekday"] == "Tue"
                           and within(f["time"], "06:00", "12:00") else "model"),
        cases=[dict(weekday="Tue", time="06:00", zones=["bins"]), dict(weekday="Tue", time="05:59", zones=["bins"]),
               dict(weekday="Tue", time="11:59", zones=["bins"]), dict(weekday="Tue", time="12:00", zones=["bins"]),
               dict(weekday="Wed", time="08:00", zones=["bins"]),
               dict(time="22:00", zones=["side passage"]), dict(time="21:59", zones=["side passage"]),
               dict(weekday="Tue", time="05:59", zones=["side passage"]),
               dict(weekday="Tue", time="07:00", zones=["side passage", "bins"]),
               dict(weekday="Tue", time="08:00", zones=["bins"], label="dog")],
        note="morning 06:00-12:00 on Tuesday only; night side passage; morning and night never overlap",
    ),
    dict(
        id="b28", setting="shop", camera="back door",
        zones=["back door", "alley"],
        words=("Alert if someone uses the back door after we close at half past five in the evening, "
               "until we open at 8 the next morning."),
        meaning=lambda f: ("alert" if person(f) and Z(f, "back door") and within(f["time"], "17:30", "08:00")
                           else "model"),
        cases=[dict(zones=["back door"], time="17:30"), dict(zones=["back door"], time="17:29"),
               dict(zones=["back door"], time="07:59"), dict(zones=["back door"], time="08:00"),
               dict(zones=["back door"], time="02:00"), dict(zones=["alley"], time="20:00"),
               dict(zones=["back door"], time="12:00", weekday="Sun")],
        note="17:30-08:00 wrapping window stated in words, no default",
    ),
    dict(
        id="b29", setting="warehouse", camera="mezzanine",
        zones=["high bay", "mezzanine", "dispatch"],
        words=("Nobody is allowed on the mezzanine without a hi-vis jacket. Pickers in hi-vis can be anywhere. "
               "At weekends, though, any person on site is an alert, hi-vis or not."),
        meaning=_b29,
        cases=[dict(weekday="Sat", zones=["high bay"], hivis=True),
               dict(weekday="Sun", zones=["dispatch"], hivis=None, time="02:00"),
               dict(weekday="Wed", zones=["mezzanine"], hivis=False),
               dict(weekday="Wed", zones=["mezzanine"], hivis=True),
               dict(weekday="Wed", zones=["dispatch"], hivis=True),
               dict(weekday="Wed", zones=["mezzanine"], hivis=None, time="23:00"),
               dict(weekday="Wed", zones=["high bay"], hivis=False),
               dict(weekday="Fri", time="23:59", zones=["mezzanine"], hivis=True),
               dict(weekday="Sat", time="00:00", zones=["dispatch"], hivis=True),
               dict(weekday="Sat", zones=["dispatch"], label="truck")],
        note="weekend overrides the hi-vis pass (words say so); 'on site' read as anywhere the camera sees",
    ),
    dict(
        id="b30", setting="car park", camera="exit",
        zones=["entry barrier", "exit barrier", "level 2"],
        words=("Cars leaving through the exit barrier are fine. A car going the wrong way at the exit barrier, "
               "coming towards the camera, should alert."),
        meaning=lambda f: (("benign" if f["direction"] == "away" else "alert" if f["direction"] == "towards"
                            else "model") if f["label"] == "car" and Z(f, "exit barrier") else "model"),
        cases=[dict(label="car", zones=["exit barrier"], direction="away"),
               dict(label="car", zones=["exit barrier"], direction="towards"),
               dict(label="car", zones=["exit barrier"], direction="away", time="03:00"),
               dict(label="car", zones=["exit barrier"], direction="left"),
               dict(label="car", zones=["entry barrier"], direction="towards"),
               dict(zones=["exit barrier"], direction="towards")],
        note="direction away vs towards for cars at one zone; lateral and person to model",
    ),
    dict(
        id="b31", setting="school", camera="front",
        zones=["front gate", "playground", "bike racks"],
        words=("School hours are 8:30 to 15:15, Monday to Friday. Outside those hours, anyone in the playground "
               "is an alert. During school hours, only alert if someone spends more than 5 minutes at the front gate."),
        meaning=_b31,
        cases=[dict(weekday="Mon", time="08:30", zones=["playground"]),
               dict(weekday="Mon", time="08:29", zones=["playground"]),
               dict(weekday="Fri", time="15:14", zones=["playground"]),
               dict(weekday="Fri", time="15:15", zones=["playground"]),
               dict(weekday="Sat", time="10:00", zones=["playground"]),
               dict(weekday="Wed", time="10:00", zones=["front gate"], dwell_s=300.1),
               dict(weekday="Wed", time="10:00", zones=["front gate"], dwell_s=300.0),
               dict(weekday="Wed", time="20:00", zones=["front gate"], dwell_s=400.0),
               dict(weekday="Wed", time="12:00", zones=["playground"], label="dog"),
               dict(weekday="Sun", time="12:00", zones=["bike racks"])],
        note="hours edges, 'only' default limited to school hours, dwell > 300 strict",
    ),
    dict(
        id="b32", setting="farm", camera="barn",
        zones=["barn", "fuel tank", "track"],
        words=("Alert if anyone's at the fuel tank between 9pm and 5am. The farm lad in the orange jumper is "
               "allowed in the barn any time."),
        meaning=lambda f: ("alert" if person(f) and Z(f, "fuel tank") and within(f["time"], "21:00", "05:00")
                           else "benign" if person(f) and Z(f, "barn") and f["upper"] == "orange" else "model"),
        cases=[dict(zones=["fuel tank"], time="21:00"), dict(zones=["fuel tank"], time="20:59"),
               dict(zones=["fuel tank"], time="04:59"), dict(zones=["fuel tank"], time="05:00"),
               dict(zones=["barn"], upper="orange", time="23:00"), dict(zones=["barn"], upper="green", time="23:00"),
               dict(zones=["barn"], upper=None, time="23:00"),
               dict(zones=["fuel tank"], upper="orange", time="23:00")],
        note="21:00-05:00 window, orange top exemption only in the barn",
    ),
    dict(
        id="b33", setting="office", camera="roof",
        zones=["roof hatch", "plant room", "terrace"],
        words=("The terrace closes at 8pm. Anyone out there from then until 7am is an alert. People on the "
               "terrace while it's open are fine. The roof hatch and plant room should never see anyone "
               "without hi-vis."),
        meaning=_b33,
        cases=[dict(zones=["terrace"], time="19:59"), dict(zones=["terrace"], time="20:00"),
               dict(zones=["terrace"], time="06:59"), dict(zones=["terrace"], time="07:00"),
               dict(zones=["terrace"], time="02:00"), dict(zones=["terrace"], time="23:00", label="bird"),
               dict(zones=["roof hatch"], hivis=False), dict(zones=["plant room"], hivis=True),
               dict(zones=["plant room"], hivis=None, time="23:00")],
        note="open 07:00-20:00 benign, closed alert; hi-vis rule for two other zones without default",
    ),
    dict(
        id="b34", setting="shop", camera="stockroom", zones=["stockroom"],
        words=("After 6pm, alert on anyone in the stockroom. People in the stockroom in the evening never "
               "need an alert."),
        refuse="contradiction", cases=[],
        note="18:00-22:00 is both 'after 6pm' and 'the evening' with opposite verdicts and no exception word",
    ),
    dict(
        id="b35", setting="home", camera="garage",
        zones=["garage door", "driveway"],
        words="If someone is at the garage door for longer than a minute between midnight and 5am, alert.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "garage door") and f["dwell_s"] > 60
                           and within(f["time"], "00:00", "05:00") else "model"),
        cases=[dict(zones=["garage door"], time="00:00", dwell_s=60.1),
               dict(zones=["garage door"], time="23:59", dwell_s=100.0),
               dict(zones=["garage door"], time="04:59", dwell_s=61.0),
               dict(zones=["garage door"], time="05:00", dwell_s=100.0),
               dict(zones=["garage door"], time="02:00", dwell_s=60.0),
               dict(zones=["driveway"], time="02:00", dwell_s=100.0),
               dict(zones=["garage door"], time="02:00", dwell_s=60.1, hivis=None)],
        note="midnight as 00:00 start, 05:00 excluded, dwell > 60 strict",
    ),
    dict(
        id="b36", setting="warehouse", camera="docks",
        zones=["dock 1", "dock 2", "yard"],
        words=("Trucks at dock 1 or dock 2 are expected Monday to Saturday from 5am to 9pm. A truck at a dock "
               "outside those times is an alert. People and cars are left to judgement."),
        meaning=lambda f: (("benign" if f["weekday"] != "Sun" and within(f["time"], "05:00", "21:00") else "alert")
                           if f["label"] == "truck" and Z(f, "dock 1", "dock 2") else "model"),
        cases=[dict(label="truck", zones=["dock 1"], weekday="Mon", time="05:00"),
               dict(label="truck", zones=["dock 1"], weekday="Mon", time="04:59"),
               dict(label="truck", zones=["dock 2"], weekday="Sat", time="20:59"),
               dict(label="truck", zones=["dock 2"], weekday="Sat", time="21:00"),
               dict(label="truck", zones=["dock 1"], weekday="Sun", time="12:00"),
               dict(label="truck", zones=["yard"], weekday="Sun", time="12:00"),
               dict(label="car", zones=["dock 1"], weekday="Sun"),
               dict(zones=["dock 2"], weekday="Sun")],
        note="Mon-Sat range, 05:00-21:00 edges, Sunday whole day out",
    ),
    dict(
        id="b37", setting="office", camera="side entrance",
        zones=["side entrance", "main entrance"],
        words=("Alert if a person in a black top and black trousers is at the side entrance after 11pm. "
               "Otherwise don't alert."),
        meaning=_b37,
        cases=[dict(zones=["side entrance"], upper="black", lower="black", time="23:00"),
               dict(zones=["side entrance"], upper="black", lower="black", time="22:59"),
               dict(zones=["side entrance"], upper="black", lower="black", time="05:59"),
               dict(zones=["side entrance"], upper="black", lower="black", time="06:00"),
               dict(zones=["side entrance"], upper="black", lower="blue", time="23:00"),
               dict(zones=["side entrance"], upper=None, lower="black", time="23:00"),
               dict(zones=["side entrance"], upper=None, lower="blue", time="23:00"),
               dict(zones=["main entrance"], upper="black", lower="black", time="23:00"),
               dict(zones=["side entrance"], upper="grey", lower="black", time="01:00")],
        note="both colours required; one unknown colour with the other black is undecided, with the other not black is benign",
    ),
    dict(
        id="b38", setting="building site", camera="excavation",
        zones=["excavation", "spoil heap", "haul road"],
        words=("People who aren't in hi-vis mustn't go near the excavation, and even people in hi-vis "
               "mustn't be there alone. Otherwise, no alert."),
        meaning=_b38,
        cases=[dict(zones=["excavation"], hivis=False, people=3), dict(zones=["excavation"], hivis=True, people=2),
               dict(zones=["excavation"], hivis=True, people=1), dict(zones=["excavation"], hivis=None, people=1),
               dict(zones=["excavation"], hivis=None, people=2), dict(zones=["spoil heap"], hivis=False),
               dict(zones=["excavation"], label="truck", people=0), dict(zones=["excavation"], hivis=True, people=4)],
        note="alone = people == 1 alerts whatever the hi-vis; unknown hi-vis in a group is undecided",
    ),
    dict(
        id="b39", setting="home", camera="back garden",
        zones=["back garden", "front path"],
        words=("We're away at weekends: ring me if someone's in the back garden on a Saturday or Sunday. "
               "On weekdays, only alert if someone in the back garden is carrying a knife."),
        meaning=_b39,
        cases=[dict(weekday="Sat", zones=["back garden"]), dict(weekday="Sun", time="23:59", zones=["back garden"]),
               dict(weekday="Mon", time="00:00", zones=["back garden"]),
               dict(weekday="Wed", zones=["back garden"], carries=["knife"]),
               dict(weekday="Wed", zones=["front path"], carries=["knife"]),
               dict(weekday="Fri", zones=["back garden"], carries=["umbrella"]),
               dict(weekday="Sat", zones=["front path"]), dict(weekday="Sat", zones=["back garden"], label="dog")],
        note="weekend alert without default; weekday 'only' gives benign default",
    ),
    dict(
        id="b40", setting="shop", camera="fitting rooms",
        zones=["fitting rooms", "shop floor", "till"],
        words=("Alert if there are more than two people in the fitting rooms at once, or anyone stays in there "
               "longer than 15 minutes."),
        meaning=lambda f: ("alert" if Z(f, "fitting rooms") and (f["people"] > 2 or f["dwell_s"] > 900)
                           else "model"),
        cases=[dict(zones=["fitting rooms"], people=3), dict(zones=["fitting rooms"], people=2),
               dict(zones=["fitting rooms"], dwell_s=900.1), dict(zones=["fitting rooms"], dwell_s=900.0),
               dict(zones=["shop floor"], people=3), dict(zones=["fitting rooms"], people=2, dwell_s=1000.0)],
        note="count > 2 or dwell > 900 strict",
    ),
    dict(
        id="b41", setting="car park", camera="level 3", zones=["car park"],
        words="Alert for anybody in the car park between 11pm and 13am.",
        refuse="impossible time", cases=[],
        note="13am does not exist",
    ),
    dict(
        id="b42", setting="office", camera="boardroom",
        zones=["boardroom", "corridor"],
        words=("Weekday evenings and any time at the weekend, anyone in the boardroom should alert. "
               "Mornings and afternoons on weekdays are fine."),
        meaning=_b42,
        cases=[dict(weekday="Wed", time="18:00", zones=["boardroom"]),
               dict(weekday="Wed", time="17:59", zones=["boardroom"]),
               dict(weekday="Wed", time="21:59", zones=["boardroom"]),
               dict(weekday="Wed", time="22:00", zones=["boardroom"]),
               dict(weekday="Wed", time="05:59", zones=["boardroom"]),
               dict(weekday="Wed", time="06:00", zones=["boardroom"]),
               dict(weekday="Sat", time="03:00", zones=["boardroom"]),
               dict(weekday="Sun", time="12:00", zones=["boardroom"]),
               dict(weekday="Fri", time="19:00", zones=["boardroom"]),
               dict(weekday="Sat", zones=["corridor"])],
        note="evening 18:00-22:00, weekday nights left undecided, weekend all day",
    ),
    dict(
        id="b43", setting="farm", camera="field gate",
        zones=["field gate", "lane"],
        words="If anyone's at the field gate on Friday night or Saturday night, tell me.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "field gate") and night_of(f, ("Fri", "Sat")) else "model"),
        cases=[dict(weekday="Fri", time="22:00", zones=["field gate"]),
               dict(weekday="Fri", time="21:59", zones=["field gate"]),
               dict(weekday="Sat", time="02:00", zones=["field gate"]),
               dict(weekday="Sat", time="06:00", zones=["field gate"]),
               dict(weekday="Sat", time="22:00", zones=["field gate"]),
               dict(weekday="Sun", time="05:59", zones=["field gate"]),
               dict(weekday="Sun", time="22:00", zones=["field gate"]),
               dict(weekday="Fri", time="02:00", zones=["field gate"]),
               dict(weekday="Sat", time="23:00", zones=["lane"])],
        note="named nights belong to the evening they start; Fri 02:00 is Thursday night",
    ),
    dict(
        id="b44", setting="home", camera="hallway",
        zones=["front door", "hallway"],
        words="Alert if anyone goes out through the front door between midnight and 6am. Coming home is fine.",
        meaning=lambda f: (("alert" if f["direction"] == "away" and within(f["time"], "00:00", "06:00")
                            else "benign" if f["direction"] == "towards" else "model")
                           if person(f) and Z(f, "front door") else "model"),
        cases=[dict(zones=["front door"], direction="away", time="00:00"),
               dict(zones=["front door"], direction="away", time="23:59"),
               dict(zones=["front door"], direction="away", time="05:59"),
               dict(zones=["front door"], direction="away", time="06:00"),
               dict(zones=["front door"], direction="towards", time="02:00"),
               dict(zones=["front door"], direction="towards", time="12:00"),
               dict(zones=["hallway"], direction="away", time="02:00"),
               dict(zones=["front door"], direction="left", time="02:00")],
        note="leaving = away, coming home = towards (fine any time), 00:00-06:00",
    ),
    dict(
        id="b45", setting="shop", camera="car park",
        zones=["parking bays", "trolley shelter", "entrance"],
        words=("Customers are welcome in the parking bays and the trolley shelter from 7am to 10pm. Outside "
               "those hours, alert on people there. Cars never need an alert."),
        meaning=_b45,
        cases=[dict(zones=["parking bays"], time="06:59"), dict(zones=["parking bays"], time="07:00"),
               dict(zones=["parking bays"], time="21:59"), dict(zones=["parking bays"], time="22:00"),
               dict(zones=["trolley shelter"], time="03:00"), dict(zones=["entrance"], time="03:00"),
               dict(zones=["parking bays"], label="car", time="03:00"),
               dict(zones=["parking bays"], label="dog", time="03:00")],
        note="07:00-22:00 benign, outside alert, cars benign anywhere",
    ),
    dict(
        id="b46", setting="warehouse", camera="cold store",
        zones=["cold store", "corridor"],
        words=("Alert if anyone has been in the cold store for 20 minutes or more. "
               "Anyone in there for less than that is fine."),
        meaning=lambda f: (("alert" if f["dwell_s"] >= 1200 else "benign")
                           if person(f) and Z(f, "cold store") else "model"),
        cases=[dict(zones=["cold store"], dwell_s=1200.0), dict(zones=["cold store"], dwell_s=1199.9),
               dict(zones=["cold store"], dwell_s=1200.1), dict(zones=["cold store"], dwell_s=5.0),
               dict(zones=["corridor"], dwell_s=2000.0), dict(zones=["cold store"], dwell_s=1500.0, people=3)],
        note="'20 minutes or more' is >= 1200 s",
    ),
    dict(
        id="b47", setting="school", camera="gate", zones=["gate"],
        words="Alert in the mornings if someone is at the gate between 2pm and 3pm.",
        refuse="never true", cases=[],
        note="morning 06:00-12:00 and 14:00-15:00 never overlap",
    ),
    dict(
        id="b48", setting="building site", camera="site entrance",
        zones=["tower crane", "site entrance", "welfare cabin"],
        words=("Trucks at the site entrance are fine from 8 till 4 on weekdays and 8 till noon on Saturdays. "
               "Any truck at the entrance at another time, alert. People in hi-vis at the entrance are fine any "
               "time; anyone else at the entrance, alert."),
        meaning=_b48,
        cases=[dict(label="truck", zones=["site entrance"], weekday="Mon", time="08:00"),
               dict(label="truck", zones=["site entrance"], weekday="Mon", time="07:59"),
               dict(label="truck", zones=["site entrance"], weekday="Fri", time="15:59"),
               dict(label="truck", zones=["site entrance"], weekday="Fri", time="16:00"),
               dict(label="truck", zones=["site entrance"], weekday="Sat", time="11:59"),
               dict(label="truck", zones=["site entrance"], weekday="Sat", time="12:00"),
               dict(label="truck", zones=["site entrance"], weekday="Sun", time="10:00"),
               dict(zones=["site entrance"], hivis=True, time="02:00"),
               dict(zones=["site entrance"], hivis=False),
               dict(zones=["site entrance"], hivis=None, time="23:00")],
        note="two delivery windows (noon end), 'anyone else' = people without hi-vis; unknown hi-vis undecided",
    ),
    dict(
        id="b49", setting="office", camera="stairwell",
        zones=["front desk", "stairs"],
        words="Alert only if someone is on the stairs carrying a laptop at the weekend.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "stairs") and "laptop" in f["carries"]
                           and f["weekday"] in WEEKEND else "benign"),
        cases=[dict(weekday="Sat", zones=["stairs"], carries=["laptop"]),
               dict(weekday="Sat", zones=["stairs"], carries=[]),
               dict(weekday="Fri", time="23:59", zones=["stairs"], carries=["laptop"]),
               dict(weekday="Sun", time="23:59", zones=["stairs"], carries=["laptop", "backpack"]),
               dict(weekday="Mon", time="00:00", zones=["stairs"], carries=["laptop"]),
               dict(weekday="Sat", zones=["front desk"], carries=["laptop"]),
               dict(weekday="Sat", zones=["stairs"], carries=["cell phone"])],
        note="'alert only if' with three conditions, benign otherwise",
    ),
    dict(
        id="b50", setting="home", camera="kitchen",
        zones=["sofa", "kitchen", "back door"],
        words=("Indoor camera. Ignore the cats completely. Any person in the kitchen when it's not between "
               "7am and 11pm, alert."),
        meaning=lambda f: ("benign" if f["label"] == "cat"
                           else "alert" if person(f) and Z(f, "kitchen") and not within(f["time"], "07:00", "23:00")
                           else "model"),
        cases=[dict(zones=["kitchen"], time="23:00"), dict(zones=["kitchen"], time="22:59"),
               dict(zones=["kitchen"], time="06:59"), dict(zones=["kitchen"], time="07:00"),
               dict(zones=["kitchen"], label="cat", time="03:00"), dict(zones=["sofa"], time="03:00"),
               dict(zones=["back door"], time="03:00"), dict(zones=["kitchen"], label="dog", time="03:00")],
        note="negated window: outside 07:00-23:00; cats benign; dog not covered",
    ),
    dict(
        id="b51", setting="shop", camera="pharmacy",
        zones=["counter", "controlled drugs cabinet", "aisle"],
        words=("Alert if anyone at the controlled drugs cabinet isn't wearing a white top. Pharmacists in "
               "white coats are fine there."),
        meaning=lambda f: (("benign" if f["upper"] == "white" else "model" if f["upper"] is None else "alert")
                           if person(f) and Z(f, "controlled drugs cabinet") else "model"),
        cases=[dict(zones=["controlled drugs cabinet"], upper="blue"),
               dict(zones=["controlled drugs cabinet"], upper="white"),
               dict(zones=["controlled drugs cabinet"], upper=None),
               dict(zones=["counter"], upper="blue"),
               dict(zones=["controlled drugs cabinet"], upper="black", time="03:00"),
               dict(zones=["controlled drugs cabinet"], upper="white", time="03:00"),
               dict(zones=["aisle"], upper="white"), dict(zones=["controlled drugs cabinet"], upper="grey")],
        note="colour negation with unknown colour undecided",
    ),
    dict(
        id="b52", setting="warehouse", camera="weighbridge",
        zones=["yard", "gate", "weighbridge"],
        words=("A truck on the weighbridge for longer than 10 minutes means it's stuck: alert. "
               "Trucks on it for 10 minutes or less are fine."),
        meaning=lambda f: (("alert" if f["dwell_s"] > 600 else "benign")
                           if f["label"] == "truck" and Z(f, "weighbridge") else "model"),
        cases=[dict(label="truck", zones=["weighbridge"], dwell_s=600.1),
               dict(label="truck", zones=["weighbridge"], dwell_s=600.0),
               dict(label="truck", zones=["weighbridge"], dwell_s=30.0),
               dict(label="truck", zones=["yard"], dwell_s=1000.0),
               dict(label="car", zones=["weighbridge"], dwell_s=1000.0),
               dict(zones=["weighbridge"], dwell_s=1000.0)],
        note="dwell > 600 vs <= 600 for trucks only",
    ),
    dict(
        id="b53", setting="school", camera="sports hall",
        zones=["sports hall", "changing rooms", "corridor"],
        words=("After 6pm, alert on any group of more than 5 people in the sports hall, unless it's a Tuesday "
               "or Thursday evening, when the club meets."),
        meaning=_b53,
        cases=[dict(weekday="Mon", time="18:00", zones=["sports hall"], people=6),
               dict(weekday="Mon", time="17:59", zones=["sports hall"], people=6),
               dict(weekday="Tue", time="18:00", zones=["sports hall"], people=6),
               dict(weekday="Tue", time="21:59", zones=["sports hall"], people=10),
               dict(weekday="Tue", time="22:00", zones=["sports hall"], people=6),
               dict(weekday="Thu", time="20:00", zones=["sports hall"], people=5),
               dict(weekday="Wed", time="05:59", zones=["sports hall"], people=8),
               dict(weekday="Wed", time="06:00", zones=["sports hall"], people=8),
               dict(weekday="Mon", time="20:00", zones=["changing rooms"], people=8),
               dict(weekday="Fri", time="19:00", zones=["sports hall"], people=6)],
        note="'after 6pm' to 06:00; 'unless' carve-out only Tue/Thu 18:00-22:00 (benign); > 5 strict",
    ),
    dict(
        id="b54", setting="home", camera="front path",
        zones=["front path", "road"],
        words="Don't alert unless someone's been on the front path for more than 45 seconds.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "front path") and f["dwell_s"] > 45 else "benign"),
        cases=[dict(zones=["front path"], dwell_s=45.1), dict(zones=["front path"], dwell_s=45.0),
               dict(zones=["front path"], dwell_s=200.0), dict(zones=["road"], dwell_s=200.0),
               dict(zones=["front path"], dwell_s=10.0), dict(zones=["front path"], dwell_s=200.0, label="dog")],
        note="'don't alert unless X' read as 'alert only if X' (see md: ambiguous)",
    ),
    dict(
        id="b55", setting="farm", camera="yard", zones=["yard"],
        words="Any car in the yard after midnight is an alert. No vehicle in the yard should ever trigger an alert.",
        refuse="contradiction", cases=[],
        note="a car is a vehicle; both sentences apply to a car in the yard at 01:00",
    ),
    dict(
        id="b56", setting="office", camera="lobby",
        zones=["revolving door", "lobby", "security desk"],
        words=("Alert if someone comes in through the revolving door between 8pm and 6am on weekdays, or at any "
               "time at the weekend. People leaving are fine."),
        meaning=_b56,
        cases=[dict(weekday="Wed", time="20:00", zones=["revolving door"], direction="towards"),
               dict(weekday="Wed", time="19:59", zones=["revolving door"], direction="towards"),
               dict(weekday="Wed", time="05:59", zones=["revolving door"], direction="towards"),
               dict(weekday="Wed", time="06:00", zones=["revolving door"], direction="towards"),
               dict(weekday="Sat", time="12:00", zones=["revolving door"], direction="towards"),
               dict(weekday="Sun", time="12:00", zones=["revolving door"], direction="away"),
               dict(weekday="Wed", time="23:00", zones=["revolving door"], direction="away"),
               dict(weekday="Wed", time="23:00", zones=["lobby"], direction="towards"),
               dict(weekday="Mon", time="02:00", zones=["revolving door"], direction="towards")],
        note="coming in = towards; leaving benign; weekday wrap window; weekend any time",
    ),
    dict(
        id="b57", setting="farm", camera="stables",
        zones=["stable block", "tack room", "yard"],
        words=("Horses in the yard are fine. Alert if anyone's in the tack room on a weekday before 7 in the "
               "morning or after 8 in the evening."),
        meaning=_b57,
        cases=[dict(weekday="Mon", time="06:59", zones=["tack room"]),
               dict(weekday="Mon", time="07:00", zones=["tack room"]),
               dict(weekday="Wed", time="19:59", zones=["tack room"]),
               dict(weekday="Wed", time="20:00", zones=["tack room"]),
               dict(weekday="Wed", time="23:59", zones=["tack room"]),
               dict(weekday="Thu", time="00:00", zones=["tack room"]),
               dict(weekday="Sat", time="06:30", zones=["tack room"]),
               dict(weekday="Sun", time="21:00", zones=["tack room"]),
               dict(label="horse", zones=["yard"], time="03:00"),
               dict(weekday="Wed", time="23:00", zones=["yard"])],
        note="before 07:00 / from 20:00 on Mon-Fri; deliberately no Sat-small-hours case (see md)",
    ),
    dict(
        id="b58", setting="shop", camera="off-licence door",
        zones=["spirits aisle", "door"],
        words="Alert if someone carrying a bottle is leaving through the door after 11pm.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "door") and f["direction"] == "away"
                           and "bottle" in f["carries"] and within(f["time"], "23:00", "06:00") else "model"),
        cases=[dict(zones=["door"], direction="away", carries=["bottle"], time="23:00"),
               dict(zones=["door"], direction="away", carries=["bottle"], time="22:59"),
               dict(zones=["door"], direction="away", carries=["bottle"], time="05:59"),
               dict(zones=["door"], direction="away", carries=["bottle"], time="06:00"),
               dict(zones=["door"], direction="towards", carries=["bottle"], time="23:00"),
               dict(zones=["door"], direction="away", carries=[], time="23:00"),
               dict(zones=["spirits aisle"], direction="away", carries=["bottle"], time="23:00"),
               dict(zones=["door"], direction="away", carries=["bottle", "handbag"], time="01:00")],
        note="leaving = away, carried object, after 23:00 to 06:00",
    ),
    dict(
        id="b59", setting="hotel", camera="fourth floor",
        zones=["corridor 4", "fire exit", "lift"],
        words=("Alert on anyone at the fire exit, any time, but not staff in hi-vis. "
               "Guests in the corridor are fine."),
        meaning=lambda f: (({False: "alert", True: "benign", None: "model"}[f["hivis"]])
                           if person(f) and Z(f, "fire exit")
                           else "benign" if person(f) and Z(f, "corridor 4") else "model"),
        cases=[dict(zones=["fire exit"], hivis=False), dict(zones=["fire exit"], hivis=True),
               dict(zones=["fire exit"], hivis=None, time="03:00"), dict(zones=["corridor 4"], hivis=False),
               dict(zones=["lift"]), dict(zones=["fire exit"], hivis=False, time="03:00"),
               dict(zones=["fire exit"], label="dog")],
        note="'but not' hi-vis carve-out (benign), unknown hi-vis undecided, corridor fine",
    ),
    dict(
        id="b60", setting="home", camera="holiday let garden",
        zones=["hot tub", "garden", "parking space"],
        words=("Quiet hours are 11pm to 8am. Alert if more than 4 people are in the garden or hot tub during "
               "quiet hours. Outside quiet hours, no alerts."),
        meaning=lambda f: ("benign" if not within(f["time"], "23:00", "08:00")
                           else "alert" if Z(f, "garden", "hot tub") and f["people"] > 4 else "model"),
        cases=[dict(zones=["garden"], people=5, time="23:00"), dict(zones=["garden"], people=5, time="22:59"),
               dict(zones=["hot tub"], people=5, time="07:59"), dict(zones=["hot tub"], people=5, time="08:00"),
               dict(zones=["garden"], people=4, time="23:00"), dict(zones=["parking space"], people=6, time="23:00"),
               dict(zones=["hot tub"], people=10, time="12:00"), dict(zones=["garden"], people=5, time="00:00")],
        note="23:00-08:00 wrap, > 4 strict, benign outside quiet hours, undecided inside",
    ),
    dict(
        id="b61", setting="building site", camera="plant yard",
        zones=["plant yard", "fuel bowser", "gate"],
        words=("Overnight, from 7 in the evening until half past six the next morning, alert on any person or "
               "vehicle in the plant yard, but not if they're wearing hi-vis (that's the security patrol)."),
        meaning=_b61,
        cases=[dict(zones=["plant yard"], hivis=False, time="19:00"),
               dict(zones=["plant yard"], hivis=False, time="18:59"),
               dict(zones=["plant yard"], hivis=True, time="23:00"),
               dict(zones=["plant yard"], hivis=None, time="02:00"),
               dict(zones=["plant yard"], label="car", time="06:29"),
               dict(zones=["plant yard"], label="truck", time="06:30"),
               dict(zones=["plant yard"], label="truck", time="00:00"),
               dict(zones=["fuel bowser"], hivis=False, time="23:00"),
               dict(zones=["plant yard"], label="dog", time="23:00")],
        note="19:00-06:30 window, hi-vis carve-out for people, vehicles always alert inside the window",
    ),
    dict(
        id="b62", setting="school", camera="school gate",
        zones=["school gate", "pavement"],
        words=("Anyone in a green jumper leaving through the school gate during the school day (9 till half "
               "past 3, Monday to Friday) should alert. People coming in are fine."),
        meaning=_b62,
        cases=[dict(weekday="Mon", time="09:00", zones=["school gate"], upper="green", direction="away"),
               dict(weekday="Mon", time="08:59", zones=["school gate"], upper="green", direction="away"),
               dict(weekday="Fri", time="15:29", zones=["school gate"], upper="green", direction="away"),
               dict(weekday="Fri", time="15:30", zones=["school gate"], upper="green", direction="away"),
               dict(weekday="Sat", time="10:00", zones=["school gate"], upper="green", direction="away"),
               dict(weekday="Wed", time="10:00", zones=["school gate"], upper="blue", direction="away"),
               dict(weekday="Wed", time="10:00", zones=["school gate"], upper=None, direction="away"),
               dict(weekday="Wed", time="10:00", zones=["school gate"], upper="green", direction="towards"),
               dict(weekday="Wed", time="10:00", zones=["pavement"], upper="green", direction="away")],
        note="colour + direction + weekday window; 'coming in' benign any time",
    ),
    dict(
        id="b63", setting="office", camera="exit",
        zones=["desk area", "printer", "exit"],
        words="Alert if anybody leaves through the exit carrying a laptop outside 8am to 6pm.",
        meaning=lambda f: ("alert" if person(f) and Z(f, "exit") and f["direction"] == "away"
                           and "laptop" in f["carries"] and not within(f["time"], "08:00", "18:00") else "model"),
        cases=[dict(zones=["exit"], direction="away", carries=["laptop"], time="18:00"),
               dict(zones=["exit"], direction="away", carries=["laptop"], time="17:59"),
               dict(zones=["exit"], direction="away", carries=["laptop"], time="07:59"),
               dict(zones=["exit"], direction="away", carries=["laptop"], time="08:00"),
               dict(zones=["exit"], direction="away", carries=["laptop"], time="02:00"),
               dict(zones=["exit"], direction="towards", carries=["laptop"], time="20:00"),
               dict(zones=["exit"], direction="away", carries=[], time="20:00"),
               dict(zones=["printer"], direction="away", carries=["laptop"], time="20:00")],
        note="'outside 8am to 6pm' is the complement of 08:00-18:00",
    ),
    dict(
        id="b64", setting="home", camera="hall",
        zones=["bedroom door", "hallway", "front door"],
        words=("Mum sometimes wanders at night. If anyone heads towards the front door between 10pm and 7am, "
               "alert me. Anyone at the front door between 7am and 10pm is fine."),
        meaning=_b64,
        cases=[dict(zones=["front door"], direction="towards", time="22:00"),
               dict(zones=["front door"], direction="towards", time="21:59"),
               dict(zones=["front door"], direction="towards", time="06:59"),
               dict(zones=["front door"], direction="towards", time="07:00"),
               dict(zones=["front door"], direction="away", time="23:00"),
               dict(zones=["hallway"], direction="towards", time="23:00"),
               dict(zones=["front door"], direction="left", time="02:00"),
               dict(zones=["front door"], direction="towards", time="23:00", label="cat")],
        note="22:00-07:00 towards alert; 07:00-22:00 benign; other directions at night undecided",
    ),
    dict(
        id="b65", setting="warehouse", camera="secure cage",
        zones=["cage", "packing bench"],
        words=("Only alert if there are two or more people in the cage between 6 in the evening and 8 in the "
               "morning. Hi-vis doesn't matter."),
        meaning=lambda f: ("alert" if Z(f, "cage") and f["people"] >= 2 and within(f["time"], "18:00", "08:00")
                           else "benign"),
        cases=[dict(zones=["cage"], people=2, time="18:00"), dict(zones=["cage"], people=2, time="17:59"),
               dict(zones=["cage"], people=2, time="07:59"), dict(zones=["cage"], people=2, time="08:00"),
               dict(zones=["cage"], people=1, time="23:00"), dict(zones=["cage"], people=3, time="23:00", hivis=True),
               dict(zones=["packing bench"], people=2, time="23:00"),
               dict(zones=["cage"], people=2, time="00:00", hivis=None)],
        note="'two or more' >= 2, 18:00-08:00 wrap, hi-vis irrelevant even when unknown",
    ),
    dict(
        id="b66", setting="shop", camera="bakery yard",
        zones=["back yard", "bins", "delivery door"],
        words=("The flour delivery comes on Monday and Thursday mornings, so a truck at the delivery door then "
               "is fine. A truck there at any other time, alert me. Ignore people at the bins."),
        meaning=_b66,
        cases=[dict(label="truck", zones=["delivery door"], weekday="Mon", time="06:00"),
               dict(label="truck", zones=["delivery door"], weekday="Mon", time="05:59"),
               dict(label="truck", zones=["delivery door"], weekday="Thu", time="11:59"),
               dict(label="truck", zones=["delivery door"], weekday="Thu", time="12:00"),
               dict(label="truck", zones=["delivery door"], weekday="Tue", time="08:00"),
               dict(label="truck", zones=["back yard"], weekday="Tue", time="08:00"),
               dict(zones=["bins"], time="02:00"),
               dict(label="car", zones=["delivery door"], weekday="Tue"),
               dict(zones=["delivery door"], weekday="Tue")],
        note="morning 06:00-12:00 on two named days; any other time alert; people at the bins ignored",
    ),
    dict(
        id="b67", setting="building site", camera="materials store",
        zones=["site cabin", "materials store"],
        words="Don't alert for anyone in hi-vis. Alert on anyone else in the materials store.",
        meaning=lambda f: ("benign" if person(f) and f["hivis"] is True
                           else ("alert" if f["hivis"] is False else "model")
                           if person(f) and Z(f, "materials store") else "model"),
        cases=[dict(zones=["materials store"], hivis=True), dict(zones=["materials store"], hivis=False),
               dict(zones=["materials store"], hivis=None, time="23:00"), dict(zones=["site cabin"], hivis=True),
               dict(zones=["site cabin"], hivis=False), dict(zones=["materials store"], hivis=False, time="03:00"),
               dict(zones=["materials store"], label="dog")],
        note="'anyone else' = people not in hi-vis; hi-vis benign anywhere",
    ),
    dict(
        id="b68", setting="home", camera="front step",
        zones=["front step", "parcel shelf"],
        words=("Alert if somebody stays on the front step for 2 minutes or longer between 8 in the evening and "
               "8 in the morning. Anyone who stays less than 2 minutes isn't a concern, day or night."),
        meaning=_b68,
        cases=[dict(zones=["front step"], dwell_s=120.0, time="20:00"),
               dict(zones=["front step"], dwell_s=119.9, time="20:00"),
               dict(zones=["front step"], dwell_s=120.0, time="19:59"),
               dict(zones=["front step"], dwell_s=120.0, time="07:59"),
               dict(zones=["front step"], dwell_s=120.0, time="08:00"),
               dict(zones=["front step"], dwell_s=500.0, time="03:00"),
               dict(zones=["parcel shelf"], dwell_s=500.0, time="03:00"),
               dict(zones=["front step"], dwell_s=5.0, time="12:00")],
        note=">= 120 s at night alerts, < 120 s benign any time, long daytime stays undecided",
    ),
    dict(
        id="b69", setting="car park", camera="chargers",
        zones=["charging bays", "walkway"],
        words=("Cars in the charging bays are fine. Alert if any vehicle other than a car is in a charging bay "
               "for longer than 15 minutes."),
        meaning=lambda f: ("benign" if f["label"] == "car" and Z(f, "charging bays")
                           else "alert" if f["label"] in ("truck", "motorcycle", "bus") and Z(f, "charging bays")
                           and f["dwell_s"] > 900 else "model"),
        cases=[dict(label="car", zones=["charging bays"], dwell_s=5000.0),
               dict(label="truck", zones=["charging bays"], dwell_s=900.1),
               dict(label="truck", zones=["charging bays"], dwell_s=900.0),
               dict(label="motorcycle", zones=["charging bays"], dwell_s=1000.0),
               dict(label="truck", zones=["walkway"], dwell_s=2000.0),
               dict(zones=["charging bays"], dwell_s=2000.0)],
        note="'other than a car' for motor vehicles, dwell > 900 strict; person is not a vehicle",
    ),
    dict(
        id="b70", setting="office", camera="open plan",
        zones=["open plan", "kitchen"],
        words=("The cleaners wear purple tabards and work 6 to 8 in the evening on weekdays. Anyone in purple "
               "during those hours is fine. Anyone else in the open plan or kitchen during those hours, alert."),
        meaning=_b70,
        cases=[dict(weekday="Wed", time="18:00", zones=["open plan"], upper="purple"),
               dict(weekday="Wed", time="18:00", zones=["open plan"], upper="blue"),
               dict(weekday="Wed", time="19:59", zones=["open plan"], upper=None),
               dict(weekday="Wed", time="20:00", zones=["open plan"], upper="blue"),
               dict(weekday="Wed", time="17:59", zones=["open plan"], upper="blue"),
               dict(weekday="Sat", time="19:00", zones=["open plan"], upper="blue"),
               dict(weekday="Fri", time="19:00", zones=["kitchen"], upper="black"),
               dict(weekday="Thu", time="19:00", zones=[], upper="blue")],
        note="18:00-20:00 Mon-Fri, upper purple benign / other alert / unknown undecided",
    ),
]
