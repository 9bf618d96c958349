"""DEV4: a development set of 120 camera policies in plain English (ids e001..e120).
Written blind from SPEC.md only. Imports nothing."""

A, B, M = "alert", "benign", "model"
DEFAULTS = {"time": "12:00", "weekday": "Wed", "zones": [], "dwell_s": 5.0, "direction": None, "people": 1,
            "label": "person", "hivis": False, "upper": None, "lower": None, "carries": []}
COLOURS = ["red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "white", "grey", "black"]
DIRS = ["towards", "away", "left", "right"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
WEEKDAYS = DAYS[:5]
WEEKEND = DAYS[5:]
VEH = ("car", "truck", "bus", "motorcycle")


def tmin(t):
    h, m = t.split(":")
    return int(h) * 60 + int(m)


def within(t, a, b):
    """a <= t < b; wraps past midnight when b <= a."""
    t, a, b = tmin(t), tmin(a), tmin(b)
    if a < b:
        return a <= t < b
    return t >= a or t < b


def U(raw):
    """Unknown-fact wrapper: merge DEFAULTS, enumerate every value of each None fact; all agree or model."""
    def meaning(f):
        g = dict(DEFAULTS)
        g.update(f)
        opts = [("hivis", [True, False]), ("upper", COLOURS), ("lower", COLOURS), ("direction", DIRS)]
        combos = [g]
        for k, vals in opts:
            if g.get(k) is None:
                nxt = []
                for c in combos:
                    for v in vals:
                        h = dict(c)
                        h[k] = v
                        nxt.append(h)
                combos = nxt
        seen = set()
        for c in combos:
            seen.add(raw(c))
            if len(seen) > 1:
                return M
        return seen.pop()
    return meaning


def z(f, *names):
    return any(n in f["zones"] for n in names)


def person(f):
    return f["label"] == "person"


def wkday(f):
    return f["weekday"] in WEEKDAYS


def wkend(f):
    return f["weekday"] in WEEKEND


def night(f):
    return within(f["time"], "22:00", "06:00")


def named_night(f, day):
    nxt = DAYS[(DAYS.index(day) + 1) % 7]
    return (f["weekday"] == day and tmin(f["time"]) >= 22 * 60) or (f["weekday"] == nxt and tmin(f["time"]) < 6 * 60)


def past(f):
    return f["direction"] in ("left", "right")


def P(id, setting, camera, zones, words, meaning=None, cases=None, note="", refuse=None):
    d = dict(id=id, setting=setting, camera=camera, zones=zones, words=words, note=note)
    if refuse:
        d["refuse"] = refuse
    else:
        d["meaning"] = U(meaning)
        d["cases"] = cases
    return d


DEV4 = []

# ---------------------------------------------------------------- e001-e030
def r001(f):
    if person(f) and z(f, "porch") and night(f):
        return A
    if z(f, "drive") and not z(f, "porch"):
        return B
    return M


DEV4.append(P("e001", "home", "front door", ["porch", "drive"],
    "Alert me if anyone is on the porch at night. Don't bother with the drive.",
    r001,
    [dict(zones=["porch"], time="22:00"), dict(zones=["porch"], time="21:59"), dict(zones=["porch"], time="05:59"),
     dict(zones=["porch"], time="06:00"), dict(zones=["drive"], time="23:00"), dict(zones=["porch"], time="23:00", label="cat"),
     dict(zones=["porch", "drive"], time="01:00")],
    "night 22-06; drive-only benign; porch by day has no verdict; cat on porch no verdict"))


def r002(f):
    if person(f) and z(f, "shop floor") and within(f["time"], "21:30", "07:00"):
        return A
    return B


DEV4.append(P("e002", "shop", "shop floor", ["shop floor", "till"],
    "we close at half nine and the cleaners are done by then. anyone on the shop floor from half past nine till 7 in the morning = alert. otherwise leave it",
    r002,
    [dict(zones=["shop floor"], time="21:30"), dict(zones=["shop floor"], time="21:29"), dict(zones=["shop floor"], time="06:59"),
     dict(zones=["shop floor"], time="07:00"), dict(zones=["till"], time="23:00"), dict(zones=["shop floor"], time="02:00", label="dog")],
    "21:30-07:00 wraps; a dog is not 'anyone' so falls to 'otherwise' -> benign"))


def r003(f):
    if not person(f):
        return M
    if z(f, "car park") and f["people"] >= 3 and f["dwell_s"] > 120:
        return A
    return M


DEV4.append(P("e003", "pub", "car park", ["car park", "beer garden"],
    "If three or more people are hanging round in the car park for more than two minutes, let me know.",
    r003,
    [dict(zones=["car park"], people=3, dwell_s=121), dict(zones=["car park"], people=3, dwell_s=120),
     dict(zones=["car park"], people=2, dwell_s=600), dict(zones=["beer garden"], people=5, dwell_s=600),
     dict(zones=["car park"], people=4, dwell_s=300, label="car")],
    "at least 3, dwell strictly over 120 s; nothing said otherwise -> model"))


def r004(f):
    if person(f) and z(f, "server room") and not f["hivis"]:
        return A
    if person(f) and z(f, "server room"):
        return B
    return M


DEV4.append(P("e004", "office", "server room", ["server room", "corridor"],
    "Nobody goes into the server room without a hi-vis vest on. If they do, alert. Contractors in hi vis are fine.",
    r004,
    [dict(zones=["server room"], hivis=False), dict(zones=["server room"], hivis=True), dict(zones=["server room"], hivis=None),
     dict(zones=["corridor"], hivis=False), dict(zones=["server room"], label="cat")],
    "hivis unknown -> model; corridor no verdict"))


def r005(f):
    if f["label"] == "dog" and z(f, "playground"):
        return A
    return B


DEV4.append(P("e005", "school", "playground", ["playground", "field"],
    "Dogs on the playground - alert. Anything else is fine.",
    r005,
    [dict(zones=["playground"], label="dog"), dict(zones=["field"], label="dog"), dict(zones=["playground"]),
     dict(zones=["playground"], label="cat"), dict(zones=["playground", "field"], label="dog", time="03:00")],
    "anything else benign"))


def r006(f):
    if z(f, "yard") and person(f) and not (wkday(f) and within(f["time"], "07:00", "18:00")):
        return A
    return M


DEV4.append(P("e006", "farm", "yard", ["yard", "lane"],
    "Alert for people in the yard except during the week between 7am and 6pm.",
    r006,
    [dict(zones=["yard"], weekday="Mon", time="07:00"), dict(zones=["yard"], weekday="Mon", time="06:59"),
     dict(zones=["yard"], weekday="Fri", time="17:59"), dict(zones=["yard"], weekday="Fri", time="18:00"),
     dict(zones=["yard"], weekday="Sat", time="10:00"), dict(zones=["lane"], weekday="Sat", time="10:00"),
     dict(zones=["yard"], weekday="Tue", time="12:00", label="dog")],
    "exception window gives no verdict (not said benign) -> model inside it"))


def r007(f):
    if z(f, "pontoon") and person(f) and within(f["time"], "00:00", "05:00"):
        return A
    return M


DEV4.append(P("e007", "marina", "pontoon", ["pontoon", "slipway"],
    "Between midnight and 5 I want to know about anybody walking on the pontoon.",
    r007,
    [dict(zones=["pontoon"], time="00:00"), dict(zones=["pontoon"], time="04:59"), dict(zones=["pontoon"], time="05:00"),
     dict(zones=["pontoon"], time="23:59"), dict(zones=["slipway"], time="02:00"), dict(zones=["pontoon"], time="02:00", label="bird")],
    "00-05 read as early morning"))


def r008(f):
    if f["label"] in VEH and z(f, "forecourt") and f["dwell_s"] >= 900:
        return A
    if f["label"] in VEH and z(f, "forecourt"):
        return B
    return M


DEV4.append(P("e008", "petrol station", "forecourt", ["forecourt", "shop door"],
    "Cars at the pumps are normal. But if a vehicle sits on the forecourt for 15 minutes or more, flag it.",
    r008,
    [dict(zones=["forecourt"], label="car", dwell_s=900), dict(zones=["forecourt"], label="car", dwell_s=899),
     dict(zones=["forecourt"], label="truck", dwell_s=1200), dict(zones=["forecourt"], label="motorcycle", dwell_s=60),
     dict(zones=["forecourt"], dwell_s=1000), dict(zones=["shop door"], label="car", dwell_s=1000)],
    "vehicle = car/truck/bus/motorcycle; people no verdict"))


def r009(f):
    if not person(f):
        return B
    if z(f, "nursery garden") and f["people"] == 1 and within(f["time"], "18:00", "07:30"):
        return A
    return B


DEV4.append(P("e009", "nursery", "garden", ["nursery garden", "gate"],
    "Only a single person on their own in the nursery garden out of hours (6pm to 7.30am) should alert. Not groups, not animals, nothing else.",
    r009,
    [dict(zones=["nursery garden"], time="18:00"), dict(zones=["nursery garden"], time="07:29"),
     dict(zones=["nursery garden"], time="07:30"), dict(zones=["nursery garden"], time="20:00", people=2),
     dict(zones=["gate"], time="20:00"), dict(zones=["nursery garden"], time="20:00", label="fox")],
    "'only' + 'nothing else' -> all else benign"))


def r010(f):
    if person(f) and z(f, "front door") and f["direction"] == "towards" and within(f["time"], "23:00", "06:00"):
        return A
    return M


DEV4.append(P("e010", "hotel", "entrance", ["front door", "street"],
    "After 11pm tell me about anyone coming in through the front door.",
    r010,
    [dict(zones=["front door"], time="23:00", direction="towards"), dict(zones=["front door"], time="23:00", direction="away"),
     dict(zones=["front door"], time="23:00"), dict(zones=["front door"], time="05:59", direction="towards"),
     dict(zones=["front door"], time="06:00", direction="towards"), dict(zones=["street"], time="01:00", direction="towards")],
    "after 11pm runs to 06:00; coming in = towards; unknown direction -> model"))


def r011(f):
    if f["label"] != "person":
        return B
    if z(f, "bay") and not f["hivis"]:
        return A
    return B


DEV4.append(P("e011", "warehouse", "loading bay", ["bay", "office"],
    "No hi-vis, no entry to the bay. Alert on anyone in the bay who isnt wearing one. Ignore everything else.",
    r011,
    [dict(zones=["bay"]), dict(zones=["bay"], hivis=True), dict(zones=["bay"], hivis=None), dict(zones=["office"]),
     dict(zones=["bay"], label="truck")],
    "typo 'isnt'; hivis None -> model"))


def r012(f):
    if person(f) and z(f, "ward corridor") and f["dwell_s"] > 300 and night(f):
        return A
    return B


DEV4.append(P("e012", "hospital ward", "corridor", ["ward corridor", "nurses station"],
    "At night, someone standing in the ward corridor for over five minutes should be flagged - could be a wandering patient. Otherwise no alerts.",
    r012,
    [dict(zones=["ward corridor"], time="03:00", dwell_s=301), dict(zones=["ward corridor"], time="03:00", dwell_s=300),
     dict(zones=["ward corridor"], time="21:00", dwell_s=900), dict(zones=["nurses station"], time="03:00", dwell_s=900),
     dict(zones=["ward corridor"], time="22:00", dwell_s=400)],
    "night 22-06 per convention"))


def r013(f):
    if person(f) and z(f, "fire exit") and f["direction"] == "away" and not named_night(f, "Sat"):
        return A
    return M


DEV4.append(P("e013", "care home", "fire exit", ["fire exit", "lounge"],
    "Residents leaving by the fire exit - alert, apart from Saturday night when the fire door is used for the bins.",
    r013,
    [dict(zones=["fire exit"], direction="away", weekday="Sat", time="22:00"),
     dict(zones=["fire exit"], direction="away", weekday="Sun", time="05:59"),
     dict(zones=["fire exit"], direction="away", weekday="Sun", time="06:00"),
     dict(zones=["fire exit"], direction="away", weekday="Sat", time="21:59"),
     dict(zones=["fire exit"], direction="towards", weekday="Mon"), dict(zones=["fire exit"], weekday="Mon")],
    "'residents' = persons leaving (role can't be seen; any person); Saturday night Sat22-Sun06 no verdict"))


def r014(f):
    if person(f) and z(f, "site") and within(f["time"], "19:00", "06:30") and not f["hivis"]:
        return A
    if person(f) and z(f, "site") and within(f["time"], "19:00", "06:30"):
        return B
    return M


DEV4.append(P("e014", "building site", "compound", ["site", "road"],
    "From 19:00 to 06:30 alert on people on site. Not the security guards though - they always wear hi-vis.",
    r014,
    [dict(zones=["site"], time="19:00"), dict(zones=["site"], time="06:29"), dict(zones=["site"], time="06:30"),
     dict(zones=["site"], time="23:00", hivis=True), dict(zones=["site"], time="23:00", hivis=None), dict(zones=["road"], time="23:00")],
    "guards told apart by hi-vis"))


DEV4.append(P("e015", "home", "garden", ["lawn"],
    "Alert me at 25:30 if anyone is in the garden.",
    refuse="impossible time 25:30"))


def r016(f):
    if person(f) and z(f, "stalls") and (night(f) or f["upper"] == "red"):
        return A
    return M


DEV4.append(P("e016", "stables", "stalls", ["stalls", "paddock"],
    "Flag anyone in the stalls overnight. Also anyone in a red top in there, any time - there's a lad who's been banned and he always wears red.",
    r016,
    [dict(zones=["stalls"], time="23:00"), dict(zones=["stalls"], upper="red"), dict(zones=["stalls"], upper="blue"),
     dict(zones=["stalls"]), dict(zones=["paddock"], upper="red"), dict(zones=["stalls"], label="horse", time="23:00")],
    "upper None by day -> model (could be red)"))


def r017(f):
    if z(f, "till") and "knife" in f["carries"]:
        return A
    return B


DEV4.append(P("e017", "shop", "till", ["till", "aisle"],
    "knife at the till = alert. nothing else matters.",
    r017,
    [dict(zones=["till"], carries=["knife"]), dict(zones=["till"], carries=["bottle"]), dict(zones=["aisle"], carries=["knife"]),
     dict(zones=["till"], carries=["knife", "handbag"]), dict(zones=["till"])],
    "terse"))


def r018(f):
    if z(f, "altar") and person(f) and not (f["weekday"] == "Sun" and within(f["time"], "09:00", "13:00")):
        return A
    return M


DEV4.append(P("e018", "church", "altar", ["altar", "nave"],
    "Someone near the altar when there isn't a service (services are Sunday 9 till 1) - tell me.",
    r018,
    [dict(zones=["altar"], weekday="Sun", time="09:00"), dict(zones=["altar"], weekday="Sun", time="13:00"),
     dict(zones=["altar"], weekday="Sun", time="12:59"), dict(zones=["altar"], weekday="Mon", time="10:00"),
     dict(zones=["nave"], weekday="Mon", time="10:00"), dict(zones=["altar"], weekday="Sat", time="10:00", label="cat")],
    "service window no verdict"))


def r019(f):
    if z(f, "shed") and person(f) and (within(f["time"], "20:00", "06:00")):
        return A
    if z(f, "shed") and person(f):
        return B
    return M


DEV4.append(P("e019", "allotment", "shed", ["shed", "path"],
    "People at the shed in the day are plot-holders, that's fine. After 8pm though, alert.",
    r019,
    [dict(zones=["shed"], time="19:59"), dict(zones=["shed"], time="20:00"), dict(zones=["shed"], time="05:59"),
     dict(zones=["shed"], time="06:00"), dict(zones=["path"], time="21:00"), dict(zones=["shed"], label="cat", time="21:00")],
    "after 8pm runs to 06:00; rest of time at the shed benign"))


def r020(f):
    if z(f, "gym floor") and person(f) and within(f["time"], "23:00", "05:00"):
        return A
    return B


DEV4.append(P("e020", "gym", "gym floor", ["gym floor", "reception"],
    "The gym's 24h but unstaffed 11pm-5am. Anyone on the gym floor in that time, alert. Apart from that, all fine.",
    r020,
    [dict(zones=["gym floor"], time="23:00"), dict(zones=["gym floor"], time="22:59"), dict(zones=["gym floor"], time="04:59"),
     dict(zones=["gym floor"], time="05:00"), dict(zones=["reception"], time="01:00")],
    "'apart from that' = otherwise benign"))


def r021(f):
    if z(f, "stacks") and person(f) and f["dwell_s"] >= 1800:
        return A
    return M


DEV4.append(P("e021", "library", "stacks", ["stacks", "desk"],
    "If somebody's been in the stacks half an hour or longer, ping me - they might be asleep.",
    r021,
    [dict(zones=["stacks"], dwell_s=1800), dict(zones=["stacks"], dwell_s=1799), dict(zones=["desk"], dwell_s=4000),
     dict(zones=["stacks"], dwell_s=3600, label="cat")],
    "half an hour = 1800 s inclusive"))


def r022(f):
    if z(f, "bins") and f["label"] in ("cat", "dog", "fox"):
        return B
    if z(f, "bins") and person(f) and within(f["time"], "00:00", "06:00"):
        return A
    return M


DEV4.append(P("e022", "flats", "bin store", ["bins", "entrance"],
    "Cats & dogs in the bin store are fine. People in there after midnight aren't (until 6).",
    r022,
    [dict(zones=["bins"], label="cat", time="02:00"), dict(zones=["bins"], time="00:00"), dict(zones=["bins"], time="05:59"),
     dict(zones=["bins"], time="06:00"), dict(zones=["bins"], time="23:59"), dict(zones=["entrance"], time="02:00")],
    "after midnight till 6"))


DEV4.append(P("e023", "home", "hallway", ["hall"],
    "Alert me when someone in the hall is a burglar. Ignore family.",
    refuse="needs who a person is (burglar vs family); every rule needs a fact that does not exist"))


def r024(f):
    if z(f, "counter") and person(f) and f["people"] > 4:
        return A
    return B


DEV4.append(P("e024", "café", "counter", ["counter", "tables"],
    "queue at the counter of more than 4 people -> alert so I can open the second till. Otherwise nothing.",
    r024,
    [dict(zones=["counter"], people=5), dict(zones=["counter"], people=4), dict(zones=["tables"], people=9),
     dict(zones=["counter"], people=6, label="dog")],
    "more than 4 = 5+"))


def r025(f):
    if z(f, "field") and f["label"] in ("dog",) and not wkend(f):
        return A
    if z(f, "field") and f["label"] == "dog":
        return B
    return M


DEV4.append(P("e025", "farm", "sheep field", ["field", "track"],
    "Dogs in the sheep field: alert Monday to Friday. At weekends we've got our own dogs out there so don't.",
    r025,
    [dict(zones=["field"], label="dog", weekday="Mon"), dict(zones=["field"], label="dog", weekday="Fri", time="23:59"),
     dict(zones=["field"], label="dog", weekday="Sat", time="00:00"), dict(zones=["field"], label="dog", weekday="Sun"),
     dict(zones=["track"], label="dog"), dict(zones=["field"], weekday="Mon")],
    "weekend = Sat/Sun whole days"))


def r026(f):
    if z(f, "car park") and f["label"] == "car" and wkend(f):
        return B
    if z(f, "car park") and person(f) and f["direction"] in ("left", "right"):
        return B
    if z(f, "car park") and person(f):
        return A
    return M


DEV4.append(P("e026", "office", "car park", ["car park", "pavement"],
    "People just walking past the car park: ignore. People actually in there doing anything else: alert. Cars parked on Sat and Sun are fine too.",
    r026,
    [dict(zones=["car park"], direction="left"), dict(zones=["car park"], direction="towards"), dict(zones=["car park"]),
     dict(zones=["car park"], label="car", weekday="Sat"), dict(zones=["car park"], label="car", weekday="Mon"),
     dict(zones=["pavement"], direction="right")],
    "walking past = left/right; unknown direction -> model; weekday car no verdict"))


def r027(f):
    if z(f, "rack room") and person(f) and "backpack" in f["carries"] and f["direction"] == "away":
        return A
    return M


DEV4.append(P("e027", "server room", "racks", ["rack room", "door"],
    "Tell me if anyone leaves the rack room with a backpack.",
    r027,
    [dict(zones=["rack room"], carries=["backpack"], direction="away"), dict(zones=["rack room"], carries=["backpack"], direction="towards"),
     dict(zones=["rack room"], carries=["backpack"]), dict(zones=["rack room"], direction="away"),
     dict(zones=["door"], carries=["backpack"], direction="away")],
    "leaves = away"))


def r028(f):
    if z(f, "garden") and person(f) and within(f["time"], "22:00", "07:00"):
        return A
    return M


DEV4.append(P("e028", "home", "back garden", ["garden", "patio"],
    "if theres someone in the back garden between 10 at night and 7 in the morning let me know",
    r028,
    [dict(zones=["garden"], time="22:00"), dict(zones=["garden"], time="06:59"), dict(zones=["garden"], time="07:00"),
     dict(zones=["garden"], time="21:59"), dict(zones=["patio"], time="23:00"), dict(zones=["garden"], time="23:00", label="cat")],
    "lowercase, no punctuation"))


DEV4.append(P("e029", "school", "gate", ["gate"],
    "Alert for anyone at the gate after 4pm. Never alert for anyone at the gate in the afternoon.",
    refuse="conflict: 16:00-18:00 is both after 4pm (alert) and afternoon (never alert); nothing says which wins"))


def r030(f):
    if z(f, "bar") and person(f) and within(f["time"], "00:30", "10:00"):
        return A
    return M


DEV4.append(P("e030", "pub", "bar", ["bar", "cellar stairs"],
    "Last staff leave at half past midnight and the cleaner comes at ten. Anyone behind the bar between those times, alert.",
    r030,
    [dict(zones=["bar"], time="00:30"), dict(zones=["bar"], time="00:29"), dict(zones=["bar"], time="09:59"),
     dict(zones=["bar"], time="10:00"), dict(zones=["cellar stairs"], time="03:00")],
    "half past midnight = 00:30"))

# ---------------------------------------------------------------- e031-e060
def r031(f):
    if not (person(f) and z(f, "reception")):
        return M
    if f["upper"] == "black" and f["lower"] == "black":
        return A
    return B


DEV4.append(P("e031", "hotel", "reception", ["reception", "lift lobby"],
    "We've had a thief dressed head to toe in black (black top and black trousers) working the lobby. If someone like that turns up at reception, alert. Other guests at reception - no alert.",
    r031,
    [dict(zones=["reception"], upper="black", lower="black"), dict(zones=["reception"], upper="black", lower="blue"),
     dict(zones=["reception"], upper="black"), dict(zones=["reception"], upper="white"), dict(zones=["lift lobby"], upper="black", lower="black"),
     dict(zones=["reception"])],
    "both black needed; upper white settles benign even with lower unknown; upper black lower unknown -> model"))


def r032(f):
    if z(f, "bike shed") and f["label"] == "bicycle":
        return B
    if z(f, "bike shed") and person(f) and f["dwell_s"] > 90:
        return A
    return M


DEV4.append(P("e032", "flats", "bike store", ["bike shed", "path"],
    "Bikes in the bike shed: obviously fine. A person lingering in there for more than a minute and a half - alert, we've had locks cut.",
    r032,
    [dict(zones=["bike shed"], label="bicycle"), dict(zones=["bike shed"], dwell_s=91), dict(zones=["bike shed"], dwell_s=90),
     dict(zones=["path"], dwell_s=300), dict(zones=["bike shed"], dwell_s=200, label="cat")],
    "1.5 min = 90 s, strictly over"))


def r033(f):
    if z(f, "cot room") and person(f):
        if within(f["time"], "12:30", "14:30") and wkday(f):
            return B
        return A
    return M


DEV4.append(P("e033", "nursery", "sleep room", ["cot room", "hall"],
    "Anyone in the cot room should alert, except at nap time (12.30-2.30 on weekdays) when staff are in and out constantly.",
    r033,
    [dict(zones=["cot room"], time="12:30"), dict(zones=["cot room"], time="14:29"), dict(zones=["cot room"], time="14:30"),
     dict(zones=["cot room"], time="12:29"), dict(zones=["cot room"], time="13:00", weekday="Sat"), dict(zones=["hall"], time="10:00")],
    "exception read as benign (staff in and out)"))


def r034(f):
    if f["label"] in VEH and z(f, "gateway") and night(f):
        return A
    if f["label"] in VEH and z(f, "gateway"):
        return B
    return M


DEV4.append(P("e034", "farm", "field gate", ["gateway", "road"],
    "Vehicles pulling into the field gateway in the daytime are usually walkers parking up - no alert. At night it's probably hare coursers so alert.",
    r034,
    [dict(zones=["gateway"], label="car", time="21:59"), dict(zones=["gateway"], label="car", time="22:00"),
     dict(zones=["gateway"], label="truck", time="05:59"), dict(zones=["gateway"], label="truck", time="06:00"),
     dict(zones=["road"], label="car", time="23:00"), dict(zones=["gateway"], time="23:00")],
    "daytime 06-22 / night 22-06; person no verdict"))


def r035(f):
    if z(f, "storeroom") and person(f) and f["people"] >= 2 and not f["hivis"]:
        return A
    return M


DEV4.append(P("e035", "warehouse", "storeroom", ["storeroom", "yard"],
    "Two or more people in the storeroom and they aren't in hi-vis? Alert.",
    r035,
    [dict(zones=["storeroom"], people=2), dict(zones=["storeroom"], people=1), dict(zones=["storeroom"], people=2, hivis=True),
     dict(zones=["storeroom"], people=3, hivis=None), dict(zones=["yard"], people=4)],
    "'they' = the people; hivis fact is the object's"))


def r036(f):
    if z(f, "entrance") and person(f) and f["direction"] == "towards" and f["weekday"] in ("Sat", "Sun") and within(f["time"], "18:00", "23:59"):
        return A
    return M


DEV4.append(P("e036", "library", "entrance", ["entrance", "steps"],
    "On weekend evenings (we're shut), alert me to anybody coming towards the entrance. Up to 23:59 is enough.",
    r036,
    [dict(zones=["entrance"], weekday="Sat", time="18:00", direction="towards"), dict(zones=["entrance"], weekday="Sat", time="17:59", direction="towards"),
     dict(zones=["entrance"], weekday="Sun", time="23:58", direction="towards"), dict(zones=["entrance"], weekday="Sun", time="23:59", direction="towards"),
     dict(zones=["entrance"], weekday="Fri", time="19:00", direction="towards"), dict(zones=["entrance"], weekday="Sat", time="19:00", direction="left")],
    "evening extended by words to 23:59 exclusive; Fri evening is not weekend"))


def r037(f):
    if not (person(f) and z(f, "lockers")):
        return M
    if "handbag" in f["carries"] or "backpack" in f["carries"]:
        return A
    return B


DEV4.append(P("e037", "gym", "changing room door", ["lockers", "corridor"],
    "people by the lockers carrying a handbag or backpack that isn't theirs... well I can't tell that, so just alert on anyone by the lockers with a handbag or a backpack. Not if they've got nothing with them.",
    r037,
    [dict(zones=["lockers"], carries=["handbag"]), dict(zones=["lockers"], carries=["backpack"]), dict(zones=["lockers"]),
     dict(zones=["lockers"], carries=["bottle"]), dict(zones=["corridor"], carries=["backpack"])],
    "operator retracts ownership condition; 'nothing with them' read as carries without bag -> benign"))


DEV4.append(P("e038", "car park", "barrier", ["barrier"],
    "Alert if a car at the barrier is going faster than 10 mph.",
    refuse="speed is not a fact; the only rule needs it"))


def r039(f):
    if z(f, "pitch") and person(f) and "sports ball" in f["carries"]:
        return B
    if z(f, "pitch") and person(f) and within(f["time"], "20:30", "07:00"):
        return A
    return M


DEV4.append(P("e039", "school", "pitch", ["pitch", "pavilion"],
    "Kids playing football on the pitch are fine any time (if they've got a ball). Otherwise people on the pitch from half eight at night to 7am - alert.",
    r039,
    [dict(zones=["pitch"], carries=["sports ball"], time="23:00"), dict(zones=["pitch"], time="20:30"), dict(zones=["pitch"], time="20:29"),
     dict(zones=["pitch"], time="06:59"), dict(zones=["pitch"], time="07:00"), dict(zones=["pavilion"], time="23:00")],
    "ball wins (said first as any-time fine); 'half eight at night' = 20:30"))


def r040(f):
    if person(f) and z(f, "pumps") and f["upper"] in ("orange", "yellow") and f["hivis"]:
        return B
    if person(f) and z(f, "pumps") and within(f["time"], "00:00", "05:00"):
        return A
    return M


DEV4.append(P("e040", "petrol station", "pumps", ["pumps", "kiosk"],
    "We're self-service only from midnight to 5. Someone at the pumps then, alert - unless it's the tanker driver (hi-vis, orange or yellow top).",
    r040,
    [dict(zones=["pumps"], time="01:00"), dict(zones=["pumps"], time="01:00", hivis=True, upper="orange"),
     dict(zones=["pumps"], time="01:00", hivis=True, upper="blue"), dict(zones=["pumps"], time="01:00", hivis=True),
     dict(zones=["pumps"], time="05:00"), dict(zones=["kiosk"], time="01:00")],
    "tanker driver told apart by hi-vis + orange/yellow top; upper unknown -> model"))


def r041(f):
    if z(f, "boatyard") and person(f) and night(f) and f["dwell_s"] >= 60:
        return A
    if z(f, "boatyard") and person(f):
        return B
    return M


DEV4.append(P("e041", "marina", "boatyard", ["boatyard", "quay"],
    "Boat owners come and go all day so daytime's fine. At night if someone stays in the boatyard a minute or more, alert. If they're just passing through quickly at night, don't.",
    r041,
    [dict(zones=["boatyard"], time="23:00", dwell_s=60), dict(zones=["boatyard"], time="23:00", dwell_s=59),
     dict(zones=["boatyard"], time="12:00", dwell_s=600), dict(zones=["boatyard"], time="21:59", dwell_s=600),
     dict(zones=["quay"], time="23:00", dwell_s=600)],
    "'they' = someone"))


def r042(f):
    if z(f, "chapel") and person(f) and (named_night(f, "Fri") or named_night(f, "Sat")):
        return A
    return M


DEV4.append(P("e042", "church", "chapel", ["chapel", "porch"],
    "Friday and Saturday nights we get lads getting in. Alert on anyone in the chapel on those nights.",
    r042,
    [dict(zones=["chapel"], weekday="Fri", time="22:00"), dict(zones=["chapel"], weekday="Fri", time="21:59"),
     dict(zones=["chapel"], weekday="Sat", time="05:59"), dict(zones=["chapel"], weekday="Sat", time="12:00"),
     dict(zones=["chapel"], weekday="Sun", time="05:59"), dict(zones=["chapel"], weekday="Sun", time="06:00"),
     dict(zones=["porch"], weekday="Fri", time="23:00")],
    "Fri night Fri22-Sat06, Sat night Sat22-Sun06"))


def r043(f):
    if z(f, "drive") and f["label"] == "car":
        return B
    if z(f, "drive") and f["label"] in ("truck", "motorcycle", "bus"):
        return A
    return M


DEV4.append(P("e043", "home", "driveway", ["drive", "road"],
    "Only cars are allowed on our drive. Any other vehicle on it, alert me.",
    r043,
    [dict(zones=["drive"], label="car"), dict(zones=["drive"], label="truck"), dict(zones=["drive"], label="motorcycle"),
     dict(zones=["drive"]), dict(zones=["road"], label="truck")],
    "'only cars allowed' -> cars benign; persons not vehicles -> model"))


def r044(f):
    if person(f) and z(f, "pharmacy") and not within(f["time"], "08:00", "20:00"):
        return A
    if person(f) and z(f, "pharmacy"):
        return B
    return M


DEV4.append(P("e044", "hospital ward", "drug cupboard", ["pharmacy", "bay 3"],
    "Drugs room is staffed 8 to 8 (8am - 8pm). Outside those hours nobody should be in there.",
    r044,
    [dict(zones=["pharmacy"], time="08:00"), dict(zones=["pharmacy"], time="07:59"), dict(zones=["pharmacy"], time="19:59"),
     dict(zones=["pharmacy"], time="20:00"), dict(zones=["bay 3"], time="23:00")],
    "'nobody should be' -> alert outside; inside staffed -> benign (implied)"))


def r045(f):
    if z(f, "lounge") and person(f) and f["direction"] == "away" and night(f):
        return A
    return M


DEV4.append(P("e045", "care home", "lounge", ["lounge", "garden door"],
    "At night: a resident heading away from the camera in the lounge (towards the garden door) - alert.",
    r045,
    [dict(zones=["lounge"], direction="away", time="02:00"), dict(zones=["lounge"], direction="towards", time="02:00"),
     dict(zones=["lounge"], time="02:00"), dict(zones=["lounge"], direction="away", time="14:00"),
     dict(zones=["garden door"], direction="away", time="02:00")],
    "resident = person; away = heading away"))


def r046(f):
    if not (person(f) and z(f, "scaffold")):
        return M
    if not f["hivis"]:
        return A
    if within(f["time"], "18:00", "07:00"):
        return A
    return B


DEV4.append(P("e046", "building site", "scaffold", ["scaffold", "hoarding"],
    "Scaffold: no hi-vis = alert, any time. With hi-vis it's fine during working hours (7 till 6). After six, anyone up there, hi-vis or not, alert.",
    r046,
    [dict(zones=["scaffold"]), dict(zones=["scaffold"], hivis=True), dict(zones=["scaffold"], hivis=True, time="18:00"),
     dict(zones=["scaffold"], hivis=True, time="06:59"), dict(zones=["scaffold"], hivis=None, time="10:00"),
     dict(zones=["scaffold"], hivis=None, time="20:00"), dict(zones=["hoarding"], time="20:00")],
    "hivis unknown at night still alert"))


DEV4.append(P("e047", "office", "reception", ["reception"],
    "Alert when there are fewer than zero people in reception.",
    refuse="condition can never hold (people count below zero)"))


def r048(f):
    if z(f, "menage") and f["label"] == "horse":
        return B
    if z(f, "menage") and f["label"] == "dog":
        return A
    if z(f, "menage") and person(f):
        return B if within(f["time"], "07:00", "21:00") else A
    return M


DEV4.append(P("e048", "stables", "arena", ["menage", "car park"],
    "Horses in the menage - fine obviously. Dogs - alert, they spook the horses. People riding or mucking out between 7am and 9pm are fine, outside that alert.",
    r048,
    [dict(zones=["menage"], label="horse"), dict(zones=["menage"], label="dog"), dict(zones=["menage"], time="06:59"),
     dict(zones=["menage"], time="07:00"), dict(zones=["menage"], time="21:00"), dict(zones=["car park"], label="dog")],
    "several sentences, per label"))


def r049(f):
    if z(f, "terrace") and person(f) and "bottle" in f["carries"] and not within(f["time"], "11:00", "23:00"):
        return A
    return M


DEV4.append(P("e049", "café", "terrace", ["terrace", "street"],
    "Licence is 11am-11pm. Anyone on the terrace with a bottle outside licensing hours, flag it pls",
    r049,
    [dict(zones=["terrace"], carries=["bottle"], time="10:59"), dict(zones=["terrace"], carries=["bottle"], time="11:00"),
     dict(zones=["terrace"], carries=["bottle"], time="23:00"), dict(zones=["terrace"], time="23:30"),
     dict(zones=["street"], carries=["bottle"], time="23:30")],
    "outside 11-23"))


def r050(f):
    if z(f, "stairwell") and person(f) and f["people"] >= 2 and within(f["time"], "23:00", "06:00"):
        return A
    if z(f, "stairwell") and person(f):
        return B
    return M


DEV4.append(P("e050", "flats", "stairwell", ["stairwell", "lobby"],
    "A couple of people or more in the stairwell late at night (11pm-6am) - alert. One person, or any time during the day, it's just residents.",
    r050,
    [dict(zones=["stairwell"], people=2, time="23:00"), dict(zones=["stairwell"], people=1, time="23:00"),
     dict(zones=["stairwell"], people=3, time="22:59"), dict(zones=["stairwell"], people=3, time="06:00"),
     dict(zones=["lobby"], people=4, time="01:00")],
    "couple or more = 2+"))


def r051(f):
    if z(f, "loading door") and f["label"] == "truck" and not (wkday(f) and within(f["time"], "06:00", "14:00")):
        return A
    if z(f, "loading door") and f["label"] == "truck":
        return B
    return M


DEV4.append(P("e051", "shop", "back door", ["loading door", "alley"],
    "Deliveries (lorries) come 6 till 2, Mon-Fri. A lorry at the loading door any other time - alert.",
    r051,
    [dict(zones=["loading door"], label="truck", time="06:00"), dict(zones=["loading door"], label="truck", time="13:59"),
     dict(zones=["loading door"], label="truck", time="14:00"), dict(zones=["loading door"], label="truck", weekday="Sun", time="08:00"),
     dict(zones=["loading door"], label="car", time="20:00"), dict(zones=["alley"], label="truck", time="20:00")],
    "6 till 2 = 06-14 (lorry deliveries morning)"))


def r052(f):
    if z(f, "hedge") and person(f) and f["direction"] in ("left", "right"):
        return B
    if z(f, "hedge") and person(f):
        return A
    return M


DEV4.append(P("e052", "home", "side path", ["hedge", "bins"],
    "People walking past by the hedge are fine, it's a public footpath. Anyone who isn't walking past, e.g. coming up to the house or stopping, alert.",
    r052,
    [dict(zones=["hedge"], direction="left"), dict(zones=["hedge"], direction="right"), dict(zones=["hedge"], direction="towards"),
     dict(zones=["hedge"], direction="away"), dict(zones=["hedge"]), dict(zones=["bins"], direction="towards")],
    "unknown direction -> model"))


def r053(f):
    if z(f, "classroom") and person(f) and (wkend(f) or not within(f["time"], "07:30", "18:00")):
        return A
    return B


DEV4.append(P("e053", "school", "classroom", ["classroom", "corridor"],
    "Alert for people in the classroom at weekends, and on weekdays before 7:30 or from 6pm. Don't alert for anything else.",
    r053,
    [dict(zones=["classroom"], weekday="Sat"), dict(zones=["classroom"], time="07:29"), dict(zones=["classroom"], time="07:30"),
     dict(zones=["classroom"], time="17:59"), dict(zones=["classroom"], time="18:00"), dict(zones=["corridor"], weekday="Sun")],
    "'before 7:30' from midnight; 'from 6pm' through midnight"))


def r054(f):
    if z(f, "cellar") and person(f) and f["lower"] == "blue" and f["upper"] == "white":
        return B
    if z(f, "cellar") and person(f):
        return A
    return M


DEV4.append(P("e054", "pub", "cellar", ["cellar", "bar"],
    "Our cellarman wears a white shirt and blue jeans every day. Anyone in the cellar who isn't dressed like that: alert.",
    r054,
    [dict(zones=["cellar"], upper="white", lower="blue"), dict(zones=["cellar"], upper="white", lower="black"),
     dict(zones=["cellar"], upper="red"), dict(zones=["cellar"], upper="white"), dict(zones=["bar"], upper="red")],
    "identity via clothes; upper red enough to alert; lower unknown with white top -> model"))


DEV4.append(P("e055", "warehouse", "racking", ["aisle"],
    "Alert if someone in the aisle is holding a forklift licence.",
    refuse="holding a licence is not a fact; every rule needs it"))


def r056(f):
    if z(f, "lobby") and person(f) and "suitcase" in f["carries"] and f["direction"] == "away" and within(f["time"], "00:00", "06:00"):
        return A
    if z(f, "lobby") and person(f) and "suitcase" in f["carries"]:
        return B
    return M


DEV4.append(P("e056", "hotel", "lobby", ["lobby", "bar"],
    "Guests with suitcases in the lobby - fine. Except someone heading out with a suitcase between midnight and 6am, that could be a runner, so alert on those.",
    r056,
    [dict(zones=["lobby"], carries=["suitcase"]), dict(zones=["lobby"], carries=["suitcase"], direction="away", time="03:00"),
     dict(zones=["lobby"], carries=["suitcase"], direction="towards", time="03:00"), dict(zones=["lobby"], carries=["suitcase"], time="03:00"),
     dict(zones=["lobby"], carries=["suitcase"], direction="away", time="06:00"), dict(zones=["lobby"], time="03:00")],
    "'those' = the people heading out; direction unknown at 03:00 -> model"))


def r057(f):
    if z(f, "plots") and person(f) and within(f["time"], "21:00", "06:00"):
        return A
    return M


DEV4.append(P("e057", "allotment", "plots", ["plots", "car park"],
    "Anyone on the plots from 9 in the evening until 6am please alert. (Veg has been going missing.)",
    r057,
    [dict(zones=["plots"], time="21:00"), dict(zones=["plots"], time="20:59"), dict(zones=["plots"], time="05:59"),
     dict(zones=["plots"], time="06:00"), dict(zones=["car park"], time="23:00")],
    "bracketed aside"))


def r058(f):
    if z(f, "weights") and person(f) and f["people"] == 1 and within(f["time"], "22:00", "06:00") and f["dwell_s"] > 1200:
        return A
    return M


DEV4.append(P("e058", "gym", "free weights", ["weights", "cardio"],
    "Lone lifter in the weights area late (10pm-6am) and not moving off for 20 mins+ might have hurt themselves. Alert.",
    r058,
    [dict(zones=["weights"], time="23:00", dwell_s=1201), dict(zones=["weights"], time="23:00", dwell_s=1200),
     dict(zones=["weights"], time="23:00", dwell_s=2000, people=2), dict(zones=["weights"], time="21:00", dwell_s=2000),
     dict(zones=["cardio"], time="23:00", dwell_s=2000)],
    "20 mins+ read as over 1200 s"))


def r059(f):
    if z(f, "ramp") and f["label"] in VEH and f["direction"] == "towards" and within(f["time"], "00:00", "06:00"):
        return A
    if z(f, "ramp") and f["label"] in VEH and f["direction"] == "away":
        return B
    return M


DEV4.append(P("e059", "car park", "entry ramp", ["ramp", "pay machine"],
    "Cars leaving via the ramp - no alerts ever. Cars coming in between 12am and 6am - alert, the car park's closed then.",
    r059,
    [dict(zones=["ramp"], label="car", direction="away", time="03:00"), dict(zones=["ramp"], label="car", direction="towards", time="03:00"),
     dict(zones=["ramp"], label="car", time="03:00"), dict(zones=["ramp"], label="car", direction="towards", time="06:00"),
     dict(zones=["ramp"], label="car", direction="towards", time="12:00"), dict(zones=["pay machine"], label="car", direction="towards", time="03:00")],
    "12am = midnight; unknown direction at 03:00 -> model"))


def r060(f):
    if z(f, "desks") and person(f) and not (wkday(f) and within(f["time"], "08:00", "18:30")):
        return A
    return B


DEV4.append(P("e060", "office", "open plan", ["desks", "kitchen"],
    "Office hours are 8:00-18:30 Monday to Friday. Anybody at the desks outside office hours -> alert. Everything else -> no.",
    r060,
    [dict(zones=["desks"], time="08:00"), dict(zones=["desks"], time="07:59"), dict(zones=["desks"], time="18:29"),
     dict(zones=["desks"], time="18:30"), dict(zones=["desks"], weekday="Sat", time="10:00"), dict(zones=["kitchen"], weekday="Sat")],
    "otherwise benign"))

# ---------------------------------------------------------------- e061-e090
def r061(f):
    if z(f, "kitchen") and person(f) and within(f["time"], "23:45", "05:15"):
        return A
    if z(f, "kitchen"):
        return B
    return M


DEV4.append(P("e061", "café", "kitchen", ["kitchen", "yard"],
    "Don't alert for the kitchen unless it's between quarter to midnight and quarter past five in the morning and there's a person in there.",
    r061,
    [dict(zones=["kitchen"], time="23:45"), dict(zones=["kitchen"], time="23:44"), dict(zones=["kitchen"], time="05:14"),
     dict(zones=["kitchen"], time="05:15"), dict(zones=["yard"], time="01:00"), dict(zones=["kitchen"], time="01:00", label="cat")],
    "'don't alert for the kitchen unless X': kitchen and X alert, kitchen otherwise benign; yard no verdict"))


def r062(f):
    if z(f, "gate") and person(f) and f["direction"] == "towards" and f["upper"] != "green":
        return A
    if z(f, "gate") and person(f) and f["direction"] == "towards":
        return B
    return M


DEV4.append(P("e062", "school", "front gate", ["gate", "road"],
    "Our uniform is a green jumper. Someone coming in through the gate who's not in green - alert.",
    r062,
    [dict(zones=["gate"], direction="towards", upper="green"), dict(zones=["gate"], direction="towards", upper="red"),
     dict(zones=["gate"], direction="towards"), dict(zones=["gate"], direction="away", upper="red"),
     dict(zones=["road"], direction="towards", upper="red")],
    "upper unknown -> model; green coming in benign (implied by uniform)"))


def r063(f):
    if z(f, "pens") and f["label"] == "dog" and within(f["time"], "12:00", "13:00"):
        return B
    if z(f, "pens") and f["label"] == "dog":
        return A
    if z(f, "pens") and person(f):
        return B
    return M


DEV4.append(P("e063", "farm", "lambing pens", ["pens", "barn door"],
    "Dogs in the pens - alert, apart from the sheepdog at feeding time (noon to 1). People in the pens are fine.",
    r063,
    [dict(zones=["pens"], label="dog", time="12:00"), dict(zones=["pens"], label="dog", time="12:59"), dict(zones=["pens"], label="dog", time="13:00"),
     dict(zones=["pens"], label="dog", time="11:59"), dict(zones=["pens"]), dict(zones=["barn door"], label="dog")],
    "sheepdog can't be told from other dogs; time window is the only distinguisher -> any dog noon-1 benign"))


def r064(f):
    if z(f, "bay 2") and person(f) and f["dwell_s"] > 45 and not f["hivis"]:
        return A
    if z(f, "bay 2") and person(f):
        return B
    return M


DEV4.append(P("e064", "hospital ward", "bay 2", ["bay 2", "sluice"],
    "Visitors in bay 2 are fine, but if someone without a hi-vis (porters wear them) stays by the bed longer than 45 seconds at... actually any time, alert.",
    r064,
    [dict(zones=["bay 2"], dwell_s=46), dict(zones=["bay 2"], dwell_s=45), dict(zones=["bay 2"], dwell_s=100, hivis=True),
     dict(zones=["bay 2"], dwell_s=100, hivis=None), dict(zones=["sluice"], dwell_s=100)],
    "self-correcting operator; hivis unknown with long dwell -> model"))


def r065(f):
    if z(f, "quay") and person(f) and night(f) and "bottle" in f["carries"]:
        return A
    if z(f, "quay") and person(f) and night(f):
        return B
    return M


DEV4.append(P("e065", "marina", "quay", ["quay", "fuel berth"],
    "Late at night people wander down the quay, that's ok. If they've got a bottle with them though, alert (drunk people fall in).",
    r065,
    [dict(zones=["quay"], time="23:00", carries=["bottle"]), dict(zones=["quay"], time="23:00"), dict(zones=["quay"], time="14:00", carries=["bottle"]),
     dict(zones=["quay"], time="05:59", carries=["bottle"]), dict(zones=["fuel berth"], time="23:00", carries=["bottle"])],
    "'late at night' read as night 22-06; 'they' = people"))


DEV4.append(P("e066", "home", "garage", ["garage"],
    "Alert if someone is in the garage between 3pm and 3:70pm.",
    refuse="impossible time 3:70pm"))


def r067(f):
    if z(f, "aisle") and person(f) and f["people"] <= 2 and wkday(f):
        return B
    if z(f, "aisle") and person(f):
        return A
    return M


DEV4.append(P("e067", "warehouse", "pick aisle", ["aisle", "dock"],
    "One or two pickers in an aisle on a weekday is normal. More than two, or anyone in an aisle at the weekend, I want an alert.",
    r067,
    [dict(zones=["aisle"], people=2), dict(zones=["aisle"], people=3), dict(zones=["aisle"], people=1, weekday="Sat"),
     dict(zones=["aisle"], people=1, weekday="Fri", time="23:59"), dict(zones=["dock"], people=5)],
    ""))


def r068(f):
    if z(f, "vestry") and person(f):
        return A
    if z(f, "churchyard") and not z(f, "vestry"):
        return B
    return M


DEV4.append(P("e068", "church", "vestry", ["vestry", "churchyard"],
    "nobody should ever be in the vestry, its locked. alert on any person. churchyard is nothing to do with me",
    r068,
    [dict(zones=["vestry"]), dict(zones=["vestry"], time="03:00", weekday="Sun"), dict(zones=["churchyard"]),
     dict(zones=["vestry"], label="cat"), dict(zones=["vestry", "churchyard"])],
    "churchyard-only benign; cat in vestry no verdict -> model"))


def r069(f):
    if z(f, "doorstep") and person(f) and "umbrella" in f["carries"]:
        return B
    if z(f, "doorstep") and person(f) and f["dwell_s"] >= 20:
        return A
    return M


DEV4.append(P("e069", "home", "doorstep", ["doorstep", "pavement"],
    "Someone hanging about on the doorstep for 20 secs or longer - alert. Not if they've got an umbrella (people shelter there when it rains).",
    r069,
    [dict(zones=["doorstep"], dwell_s=20), dict(zones=["doorstep"], dwell_s=19), dict(zones=["doorstep"], dwell_s=60, carries=["umbrella"]),
     dict(zones=["pavement"], dwell_s=60), dict(zones=["doorstep"], dwell_s=60, label="dog")],
    "rain not known but umbrella is; 'not if they've got an umbrella' read as benign"))


def r070(f):
    if z(f, "reading room") and person(f) and "cell phone" in f["carries"]:
        return A
    return B


DEV4.append(P("e070", "library", "quiet room", ["reading room", "foyer"],
    "Phones are banned in the reading room. Alert on people in there holding a phone; everyone else is fine.",
    r070,
    [dict(zones=["reading room"], carries=["cell phone"]), dict(zones=["reading room"]), dict(zones=["foyer"], carries=["cell phone"]),
     dict(zones=["reading room"], carries=["cell phone", "backpack"])],
    ""))


def r071(f):
    if not z(f, "terraces"):
        return M
    if f["label"] == "motorcycle":
        return A
    if person(f) and within(f["time"], "00:00", "06:00") and f["weekday"] != "Sun":
        return A
    return M


DEV4.append(P("e071", "flats", "communal garden", ["terraces", "road"],
    "Motorbikes on the terraces (we've had kids riding them round) - alert. Also people on the terraces from midnight to six, but not on Sunday mornings when the market traders set up.",
    r071,
    [dict(zones=["terraces"], label="motorcycle"), dict(zones=["terraces"], time="00:00"), dict(zones=["terraces"], time="06:00"),
     dict(zones=["terraces"], time="03:00", weekday="Sun"), dict(zones=["terraces"], time="03:00", weekday="Sat"), dict(zones=["road"], label="motorcycle")],
    "Sunday morning 00-06 excluded -> model"))


def r072(f):
    if z(f, "ticket office") and person(f) and f["people"] > 1 and within(f["time"], "17:00", "17:30"):
        return A
    return M


DEV4.append(P("e072", "shop", "cash office", ["ticket office", "shop floor"],
    "Cashing up is 5 to half 5. If there's more than one person in the office then, alert.",
    r072,
    [dict(zones=["ticket office"], people=2, time="17:00"), dict(zones=["ticket office"], people=2, time="17:29"),
     dict(zones=["ticket office"], people=2, time="17:30"), dict(zones=["ticket office"], people=1, time="17:10"),
     dict(zones=["shop floor"], people=3, time="17:10")],
    "5 to half 5 read as 17:00-17:30 (shop hours)"))


def r073(f):
    if z(f, "paddock") and f["label"] in ("dog", "horse"):
        return B
    if z(f, "paddock"):
        return A
    return M


DEV4.append(P("e073", "stables", "paddock", ["paddock", "lane"],
    "Nothing but horses and dogs should be in the paddock. Anything else, alert.",
    r073,
    [dict(zones=["paddock"], label="horse"), dict(zones=["paddock"], label="dog"), dict(zones=["paddock"]),
     dict(zones=["paddock"], label="car"), dict(zones=["lane"])],
    "'nothing but' exception form; people alert too"))


DEV4.append(P("e074", "office", "lobby", ["lobby"],
    "Alert on anyone in the lobby. Don't alert on anyone in the lobby.",
    refuse="two sentences contradict for every person in the lobby, nothing says which wins"))


def r075(f):
    if z(f, "ward door") and person(f) and f["direction"] == "away" and within(f["time"], "20:00", "08:00"):
        return A
    if z(f, "ward door") and person(f) and f["direction"] == "towards":
        return B
    return M


DEV4.append(P("e075", "care home", "ward door", ["ward door", "day room"],
    "People coming in through the door are visitors, fine. People going out from 8pm to 8am - alert, could be a resident wandering off.",
    r075,
    [dict(zones=["ward door"], direction="towards", time="23:00"), dict(zones=["ward door"], direction="away", time="20:00"),
     dict(zones=["ward door"], direction="away", time="07:59"), dict(zones=["ward door"], direction="away", time="08:00"),
     dict(zones=["ward door"], time="23:00"), dict(zones=["day room"], direction="away", time="23:00")],
    "unknown direction at night: towards benign, away alert -> model"))


def r076(f):
    if z(f, "plant") and f["label"] in ("truck", "car") and not within(f["time"], "07:00", "19:00"):
        return A
    if z(f, "plant") and person(f) and not f["hivis"] and within(f["time"], "07:00", "19:00"):
        return A
    return M


DEV4.append(P("e076", "building site", "plant yard", ["plant", "gate"],
    "1) Vehicles in the plant yard out of hours (before 7 or 7pm onwards) - alert. 2) During hours, anyone without hi-vis in the plant yard - alert.",
    r076,
    [dict(zones=["plant"], label="truck", time="06:59"), dict(zones=["plant"], label="truck", time="07:00"),
     dict(zones=["plant"], label="car", time="19:00"), dict(zones=["plant"], time="10:00"), dict(zones=["plant"], time="10:00", hivis=True),
     dict(zones=["plant"], time="10:00", hivis=None), dict(zones=["gate"], label="truck", time="23:00")],
    "numbered list; vehicles here car/truck"))


def r077(f):
    if z(f, "beer garden") and person(f) and not within(f["time"], "11:00", "23:30"):
        return A
    if z(f, "beer garden") and f["label"] in ("dog", "cat"):
        return B
    return M


DEV4.append(P("e077", "pub", "beer garden", ["beer garden", "lane"],
    "Beer garden's open 11 til 11.30pm. Anyone out there other than in opening hours gets an alert. Dogs and cats never.",
    r077,
    [dict(zones=["beer garden"], time="10:59"), dict(zones=["beer garden"], time="11:00"), dict(zones=["beer garden"], time="23:29"),
     dict(zones=["beer garden"], time="23:30"), dict(zones=["beer garden"], label="dog", time="03:00"), dict(zones=["lane"], time="03:00")],
    "'til' spelling; inside hours people -> model"))


def r078(f):
    if z(f, "toddler room") and person(f) and f["people"] >= 1 and within(f["time"], "18:30", "07:00"):
        return A
    if z(f, "toddler room") and person(f):
        return B
    return M


DEV4.append(P("e078", "nursery", "toddler room", ["toddler room", "kitchen"],
    "Toddler room is empty between half six in the evening and 7am; nobody should be in it then. Rest of the day there'll be loads of kids + staff, no alerts.",
    r078,
    [dict(zones=["toddler room"], time="18:30"), dict(zones=["toddler room"], time="18:29", people=12), dict(zones=["toddler room"], time="06:59"),
     dict(zones=["toddler room"], time="07:00"), dict(zones=["kitchen"], time="20:00")],
    ""))


def r079(f):
    if z(f, "stairs") and person(f) and f["direction"] == "away" and "suitcase" not in f["carries"]:
        return B
    if z(f, "stairs") and person(f) and f["direction"] == "away":
        return A
    return M


DEV4.append(P("e079", "hotel", "back stairs", ["stairs", "kitchen door"],
    "Staff use the back stairs going down - no alert. But if anyone goes down them carrying a suitcase, alert.",
    r079,
    [dict(zones=["stairs"], direction="away"), dict(zones=["stairs"], direction="away", carries=["suitcase"]),
     dict(zones=["stairs"], direction="towards", carries=["suitcase"]), dict(zones=["stairs"], carries=["suitcase"]),
     dict(zones=["kitchen door"], direction="away", carries=["suitcase"])],
    "going down = away from camera; staff = persons"))


def r080(f):
    if z(f, "cage") and person(f) and f["hivis"] and f["upper"] == "orange":
        return B
    if z(f, "cage") and person(f):
        return A
    return M


DEV4.append(P("e080", "warehouse", "high-value cage", ["cage", "aisle"],
    "Only security (orange hi-vis) in the cage. Everyone else = alert.",
    r080,
    [dict(zones=["cage"], hivis=True, upper="orange"), dict(zones=["cage"], hivis=True, upper="yellow"), dict(zones=["cage"], hivis=True),
     dict(zones=["cage"]), dict(zones=["aisle"]), dict(zones=["cage"], hivis=None, upper="orange")],
    "hivis False with any colour alerts"))


def r081(f):
    if z(f, "pool deck") and person(f) and f["people"] == 1 and within(f["time"], "21:00", "06:00"):
        return A
    if z(f, "pool deck") and person(f) and f["people"] >= 2:
        return B
    return M


DEV4.append(P("e081", "gym", "pool", ["pool deck", "changing"],
    "Swimming alone after 9pm is against the rules. Alert if there's just one person on the pool deck then. Two or more at any time is fine.",
    r081,
    [dict(zones=["pool deck"], time="21:00"), dict(zones=["pool deck"], time="20:59"), dict(zones=["pool deck"], time="05:59"),
     dict(zones=["pool deck"], time="06:30"), dict(zones=["pool deck"], time="07:00"), dict(zones=["pool deck"], time="23:00", people=2),
     dict(zones=["changing"], time="23:00")],
    "'after 9pm' runs to 06:00 (convention 3); 06:30 alone -> model; two or more benign any time"))


def r082(f):
    if z(f, "compost") and f["label"] in ("dog", "cat", "bird"):
        return B
    if z(f, "compost") and person(f) and f["dwell_s"] > 600:
        return A
    return M


DEV4.append(P("e082", "allotment", "compost bays", ["compost", "gate"],
    "Animals at the compost are fine (birds, cats, dogs, whatever). People - only if they're there over 10 minutes.",
    r082,
    [dict(zones=["compost"], label="bird"), dict(zones=["compost"], dwell_s=601), dict(zones=["compost"], dwell_s=600),
     dict(zones=["gate"], dwell_s=900), dict(zones=["compost"], label="car", dwell_s=900)],
    "'only if over 10 min' -> alert; under gives no verdict"))


DEV4.append(P("e083", "petrol station", "shop", ["shop"],
    "Alert me if anyone in the shop looks nervous or shifty.",
    refuse="demeanour is not a fact; every rule needs it"))


def r084(f):
    if z(f, "nave") and person(f) and within(f["time"], "17:00", "09:00") and not (f["weekday"] == "Wed" and within(f["time"], "19:00", "21:00")):
        return A
    return M


DEV4.append(P("e084", "church", "nave", ["nave", "tower"],
    "Church is open 9-5. After that, anyone in the nave gets an alert, other than Wednesday choir practice 7-9pm.",
    r084,
    [dict(zones=["nave"], time="17:00"), dict(zones=["nave"], time="16:59"), dict(zones=["nave"], time="08:59"),
     dict(zones=["nave"], time="09:00"), dict(zones=["nave"], time="19:30", weekday="Wed"), dict(zones=["nave"], time="19:30", weekday="Thu"),
     dict(zones=["nave"], time="21:00", weekday="Wed"), dict(zones=["tower"], time="23:00")],
    "closed 17:00-09:00 (until it opens again, not convention 3 since an opening time is given)"))


def r085(f):
    if z(f, "forecourt") and person(f) and f["upper"] in ("red", "yellow") and f["hivis"]:
        return B
    if z(f, "forecourt") and f["label"] in ("bus",):
        return A
    return M


DEV4.append(P("e085", "petrol station", "forecourt", ["forecourt", "air pump"],
    "Buses aren't allowed to fill up here, so a bus on the forecourt = alert. Our attendants wear red or yellow hi-vis, don't alert on them.",
    r085,
    [dict(zones=["forecourt"], label="bus"), dict(zones=["forecourt"], hivis=True, upper="red"), dict(zones=["forecourt"], hivis=True, upper="blue"),
     dict(zones=["forecourt"]), dict(zones=["air pump"], label="bus")],
    "other persons: no verdict"))


def r086(f):
    if z(f, "patio") and f["label"] == "cat":
        return B
    if z(f, "patio") and f["label"] in ("dog", "fox"):
        return A
    if z(f, "patio") and person(f) and night(f):
        return A
    return B


DEV4.append(P("e086", "home", "patio", ["patio", "lawn"],
    "The cat's allowed on the patio. The neighbour's dog isn't - alert on dogs. People only at night. Anything else, ignore.",
    r086,
    [dict(zones=["patio"], label="cat"), dict(zones=["patio"], label="dog"), dict(zones=["patio"]), dict(zones=["patio"], time="22:30"),
     dict(zones=["lawn"], label="dog"), dict(zones=["patio"], label="bird")],
    "'only at night' for people; daytime person -> anything else -> benign"))


def r087(f):
    if not (z(f, "bar") and person(f)):
        return M
    fri = f["weekday"] == "Fri" and tmin(f["time"]) >= 22 * 60
    sat = f["weekday"] == "Sat" and (tmin(f["time"]) >= 22 * 60 or tmin(f["time"]) < 120)
    sun = f["weekday"] == "Sun" and tmin(f["time"]) < 120
    if f["people"] >= 6 and (fri or sat or sun):
        return A
    return M


DEV4.append(P("e087", "pub", "bar area", ["bar", "toilets"],
    "On Friday and Saturday nights from 10 till 2, if there's 6+ people crowding the bar, ping me.",
    r087,
    [dict(zones=["bar"], people=6, weekday="Fri", time="22:00"), dict(zones=["bar"], people=6, weekday="Sat", time="01:59"),
     dict(zones=["bar"], people=6, weekday="Sat", time="02:00"), dict(zones=["bar"], people=5, weekday="Fri", time="23:00"),
     dict(zones=["bar"], people=8, weekday="Sun", time="01:00"), dict(zones=["bar"], people=8, weekday="Fri", time="01:00"),
     dict(zones=["toilets"], people=8, weekday="Fri", time="23:00")],
    "Fri night 22-02 runs into Sat morning; Fri 01:00 is Thursday's night -> model"))


def r088(f):
    if z(f, "yard") and f["label"] in ("cow",):
        return B
    if z(f, "yard") and f["label"] in VEH and f["dwell_s"] < 30:
        return B
    if z(f, "yard") and f["label"] in VEH:
        return A
    return M


DEV4.append(P("e088", "farm", "milking yard", ["yard", "lane"],
    "Cows in the yard - no. Vehicles that turn round in the yard and go (under 30 seconds) - no. Vehicles that stop there longer - yes alert.",
    r088,
    [dict(zones=["yard"], label="cow"), dict(zones=["yard"], label="car", dwell_s=29), dict(zones=["yard"], label="car", dwell_s=30),
     dict(zones=["yard"], label="truck", dwell_s=120), dict(zones=["yard"], dwell_s=120), dict(zones=["lane"], label="car", dwell_s=120)],
    "'no' = no alert = benign"))


def r089(f):
    if z(f, "comms cupboard") and person(f) and not (wkday(f) and within(f["time"], "09:00", "17:00") and f["hivis"]):
        return A
    return B


DEV4.append(P("e089", "office", "comms cupboard", ["comms cupboard", "landing"],
    "Alert for everyone at the comms cupboard except engineers in hi-vis during weekday working hours (9-5). Nothing else alerts.",
    r089,
    [dict(zones=["comms cupboard"], hivis=True), dict(zones=["comms cupboard"]), dict(zones=["comms cupboard"], hivis=True, time="17:00"),
     dict(zones=["comms cupboard"], hivis=True, weekday="Sat"), dict(zones=["comms cupboard"], hivis=None), dict(zones=["landing"])],
    "engineers = hi-vis"))


def r090(f):
    if z(f, "shopfront") and person(f) and within(f["time"], "00:00", "06:00"):
        return A
    if z(f, "pavement") and person(f) and f["direction"] in ("left", "right"):
        return B
    return M


DEV4.append(P("e090", "shop", "shopfront", ["shopfront", "pavement"],
    "Between midnight and 6 alert on anyone right up at the shopfront, even if they're only walking by. Apart from that, ignore people walking along the pavement.",
    r090,
    [dict(zones=["pavement"], direction="left"), dict(zones=["pavement"], direction="towards"), dict(zones=["shopfront"], time="00:00"),
     dict(zones=["shopfront"], time="06:00"), dict(zones=["shopfront", "pavement"], time="02:00", direction="right"),
     dict(zones=["shopfront", "pavement"], time="02:00", direction="towards")],
    "'even if' makes the shopfront rule win over the pavement one"))

# ---------------------------------------------------------------- e091-e120
def r091(f):
    if z(f, "front garden") and person(f) and f["direction"] == "towards" and f["dwell_s"] > 10 and within(f["time"], "00:00", "07:00"):
        return A
    if z(f, "front garden") and person(f) and f["direction"] in ("left", "right"):
        return B
    return M


DEV4.append(P("e091", "home", "front garden", ["front garden", "street"],
    "Before 7am, if someone comes up the front garden towards the house and is there more than 10 seconds, alert me. People just going past never.",
    r091,
    [dict(zones=["front garden"], direction="towards", dwell_s=11, time="06:59"), dict(zones=["front garden"], direction="towards", dwell_s=11, time="07:00"),
     dict(zones=["front garden"], direction="towards", dwell_s=10, time="03:00"), dict(zones=["front garden"], direction="left", dwell_s=30, time="03:00"),
     dict(zones=["front garden"], dwell_s=30, time="03:00"), dict(zones=["street"], direction="towards", dwell_s=30, time="03:00")],
    "'before 7am' runs from midnight (convention 3)"))


def r092(f):
    if z(f, "corridor") and person(f) and wkday(f) and within(f["time"], "09:10", "15:20")  and f["dwell_s"] >= 180:
        return A
    return M


DEV4.append(P("e092", "school", "corridor", ["corridor", "hall"],
    "During lessons (9.10am - 3.20pm, weekdays) pupils shouldn't be hanging about in the corridor. If someone is in the corridor 3 minutes or more during lessons, alert.",
    r092,
    [dict(zones=["corridor"], time="09:10", dwell_s=180), dict(zones=["corridor"], time="09:09", dwell_s=180),
     dict(zones=["corridor"], time="15:19", dwell_s=180), dict(zones=["corridor"], time="15:20", dwell_s=180),
     dict(zones=["corridor"], time="10:00", dwell_s=179), dict(zones=["corridor"], time="10:00", dwell_s=400, weekday="Sun"),
     dict(zones=["hall"], time="10:00", dwell_s=400)],
    "3 minutes inclusive"))


def r093(f):
    start = f["weekday"] if tmin(f["time"]) >= 22 * 60 else DAYS[(DAYS.index(f["weekday"]) - 1) % 7]
    if z(f, "dock") and f["label"] == "truck" and within(f["time"], "22:00", "05:00") and start != "Sun":
        return B
    if z(f, "dock") and f["label"] == "truck":
        return A
    return M


DEV4.append(P("e093", "warehouse", "night dock", ["dock", "gatehouse"],
    "Night trunkers arrive at the dock 10pm to 5am, Monday to Saturday. Any lorry outside that: alert.",
    r093,
    [dict(zones=["dock"], label="truck", time="22:00"), dict(zones=["dock"], label="truck", time="04:59"), dict(zones=["dock"], label="truck", time="05:00"),
     dict(zones=["dock"], label="truck", time="21:59"), dict(zones=["dock"], label="truck", time="23:00", weekday="Sun"),
     dict(zones=["dock"], label="truck", time="02:00", weekday="Mon"), dict(zones=["dock"], label="truck", time="02:00", weekday="Sun"), dict(zones=["gatehouse"], label="truck", time="12:00")],
    "nights named by their start day (convention 2): Mon..Sat nights benign; Sunday night (Sun 22 - Mon 05) alert"))


def r094(f):
    if z(f, "bedside") and person(f) and f["people"] >= 3:
        return A
    return M


DEV4.append(P("e094", "hospital ward", "side room", ["bedside", "door"],
    "Infection control: max 2 visitors at the bedside. If there's more than that, alert.",
    r094,
    [dict(zones=["bedside"], people=3), dict(zones=["bedside"], people=2), dict(zones=["door"], people=5)],
    "'that' = 2; visitors = people count"))


def r095(f):
    if z(f, "dining room") and person(f) and within(f["time"], "23:00", "06:00"):
        return A
    return M


DEV4.append(P("e095", "care home", "dining room", ["dining room", "kitchen hatch"],
    "Alert if a resident in the dining room has fallen asleep in their chair. And anyone in the dining room from 11pm to 6am, alert too.",
    r095,
    [dict(zones=["dining room"], time="23:00"), dict(zones=["dining room"], time="22:59"), dict(zones=["dining room"], time="05:59"),
     dict(zones=["dining room"], time="06:00"), dict(zones=["dining room"], time="14:00", dwell_s=3000), dict(zones=["kitchen hatch"], time="01:00")],
    "first sentence needs an unknowable fact (asleep): product should flag it, not compile it silently; meaning covers the night rule only"))


def r096(f):
    if z(f, "site gate") and f["label"] in VEH and not within(f["time"], "07:30", "17:30"):
        return A
    if z(f, "site gate") and person(f) and f["hivis"]:
        return B
    return M


DEV4.append(P("e096", "building site", "site gate", ["site gate", "footpath"],
    "Gate opens half seven, shuts half five. Vehicles at the gate when it's shut -> alert. Lads in hi-vis at the gate, fine whenever.",
    r096,
    [dict(zones=["site gate"], label="truck", time="07:29"), dict(zones=["site gate"], label="truck", time="07:30"),
     dict(zones=["site gate"], label="car", time="17:30"), dict(zones=["site gate"], label="car", time="17:29"),
     dict(zones=["site gate"], hivis=True, time="23:00"), dict(zones=["site gate"], time="23:00"), dict(zones=["footpath"], label="car", time="23:00")],
    "shut 17:30-07:30"))


def r097(f):
    if z(f, "till") and person(f) and within(f["time"], "12:00", "14:00") and f["people"] > 3:
        return A
    if z(f, "till") and person(f) and f["people"] > 6:
        return A
    return B


DEV4.append(P("e097", "café", "till", ["till", "door"],
    "lunchtime rush (12-2) i want to know when theres more than 3 waiting at the till. rest of the day only bother me if its more than 6. no other alerts",
    r097,
    [dict(zones=["till"], people=4, time="12:00"), dict(zones=["till"], people=3, time="13:00"), dict(zones=["till"], people=4, time="14:00"),
     dict(zones=["till"], people=7, time="16:00"), dict(zones=["till"], people=6, time="16:00"), dict(zones=["door"], people=9)],
    "lowercase typos"))


def r098(f):
    if z(f, "pontoon") and f["label"] in ("dog",) and f["dwell_s"] > 60:
        return A
    if z(f, "pontoon") and f["label"] == "bird":
        return B
    return M


DEV4.append(P("e098", "marina", "visitor pontoon", ["pontoon", "office"],
    "Birds - ignore them. A dog left on the pontoon over a minute, let me know about it (someone's left it behind).",
    r098,
    [dict(zones=["pontoon"], label="bird"), dict(zones=["pontoon"], label="dog", dwell_s=61), dict(zones=["pontoon"], label="dog", dwell_s=60),
     dict(zones=["pontoon"], dwell_s=300), dict(zones=["office"], label="dog", dwell_s=300)],
    "'it' = the dog"))


def r099(f):
    if z(f, "stable block") and person(f) and (named_night(f, "Fri") or named_night(f, "Sat")):
        return B
    if z(f, "stable block") and person(f) and (named_night(f, "Sun") or named_night(f, "Mon") or named_night(f, "Tue") or named_night(f, "Wed") or named_night(f, "Thu")):
        return A
    return M


DEV4.append(P("e099", "stables", "stable block", ["stable block", "tack room"],
    "School nights only (Sunday to Thursday nights) - anyone in the stable block should alert. Fri/Sat nights we have late checks so no.",
    r099,
    [dict(zones=["stable block"], weekday="Sun", time="22:00"), dict(zones=["stable block"], weekday="Fri", time="05:00"),
     dict(zones=["stable block"], weekday="Fri", time="22:00"), dict(zones=["stable block"], weekday="Sat", time="05:00"),
     dict(zones=["stable block"], weekday="Mon", time="12:00"), dict(zones=["tack room"], weekday="Mon", time="23:00")],
    "named nights Sun22-Fri06 alert; Fri/Sat nights 'no' -> benign; daytime model"))


def r100(f):
    if z(f, "staffroom") and person(f) and f["lower"] == "grey" and f["upper"] == "white":
        return B
    if z(f, "staffroom") and person(f) and f["people"] == 1 and wkend(f):
        return A
    return M


DEV4.append(P("e100", "school", "staffroom", ["staffroom", "stairs"],
    "Weekends: one person alone in the staffroom = alert. Unless they're in white shirt and grey trousers (that's our caretaker's uniform), then it's fine.",
    r100,
    [dict(zones=["staffroom"], weekday="Sat"), dict(zones=["staffroom"], weekday="Sat", upper="white", lower="grey"),
     dict(zones=["staffroom"], weekday="Sat", upper="red"), dict(zones=["staffroom"], weekday="Sat", people=2, upper="red"),
     dict(zones=["staffroom"], weekday="Mon", upper="red"), dict(zones=["stairs"], weekday="Sat", upper="red")],
    "upper unknown -> model"))


DEV4.append(P("e101", "gym", "studio", ["studio"],
    "Alert when the studio is over capacity: more than 20 people in it but fewer than 15.",
    refuse="condition can never hold (more than 20 and fewer than 15)"))


def r102(f):
    if z(f, "fire door") and person(f) and f["direction"] == "away":
        return A
    if z(f, "fire door"):
        return B
    return M


DEV4.append(P("e102", "library", "fire door", ["fire door", "stacks"],
    "Alarm if someone goes out the fire door. People coming back in, or anything else at the fire door, no alarm.",
    r102,
    [dict(zones=["fire door"], direction="away"), dict(zones=["fire door"], direction="towards"), dict(zones=["fire door"]),
     dict(zones=["fire door"], label="cat", direction="away"), dict(zones=["stacks"], direction="away")],
    "goes out = away"))


def r103(f):
    if z(f, "landing") and person(f) and "knife" in f["carries"]:
        return A
    if z(f, "landing") and person(f) and within(f["time"], "01:00", "05:00"):
        return A
    return B


DEV4.append(P("e103", "flats", "top landing", ["landing", "roof hatch"],
    "Anyone with a knife on the landing, obviously alert. Also anybody on the landing between 1 and 5 in the morning. That's it - nothing else.",
    r103,
    [dict(zones=["landing"], carries=["knife"]), dict(zones=["landing"], time="01:00"), dict(zones=["landing"], time="05:00"),
     dict(zones=["landing"], time="00:59"), dict(zones=["roof hatch"], carries=["knife"], time="03:00")],
    ""))


def r104(f):
    if z(f, "aisle 4") and person(f) and f["dwell_s"] > 240 and not f["hivis"]:
        return A
    return B


DEV4.append(P("e104", "shop", "aisle 4", ["aisle 4", "entrance"],
    "Alcohol aisle: if a customer (so not staff - ours wear hi-vis) stands there longer than 4 minutes alert. Don't alert on anything else.",
    r104,
    [dict(zones=["aisle 4"], dwell_s=241), dict(zones=["aisle 4"], dwell_s=240), dict(zones=["aisle 4"], dwell_s=600, hivis=True),
     dict(zones=["aisle 4"], dwell_s=600, hivis=None), dict(zones=["entrance"], dwell_s=600)],
    "customer = not hi-vis"))


def r105(f):
    if z(f, "reception") and person(f) and within(f["time"], "19:00", "07:00"):
        return A
    return M


DEV4.append(P("e105", "office", "reception", ["reception", "car park"],
    "Reception's unmanned overnight from seven till seven. Anyone there, alert. Also alert me if they look like they're casing the place.",
    r105,
    [dict(zones=["reception"], time="19:00"), dict(zones=["reception"], time="06:59"), dict(zones=["reception"], time="07:00"),
     dict(zones=["reception"], time="18:59"), dict(zones=["car park"], time="23:00")],
    "second sentence needs an unknowable fact (casing the place): product should flag it; meaning covers the first only"))


def r106(f):
    if z(f, "churchyard") and person(f) and night(f) and f["people"] >= 2:
        return A
    if z(f, "churchyard") and person(f) and not night(f):
        return B
    return M


DEV4.append(P("e106", "church", "churchyard", ["churchyard", "lychgate"],
    "People visiting graves in the daytime - no alerts. Groups of two or more in the churchyard at night - alert.",
    r106,
    [dict(zones=["churchyard"], time="21:59"), dict(zones=["churchyard"], time="22:00", people=2), dict(zones=["churchyard"], time="22:00"),
     dict(zones=["churchyard"], time="06:00", people=3), dict(zones=["lychgate"], time="23:00", people=3)],
    "daytime 06-22; lone person at night -> model"))


def r107(f):
    if not (z(f, "nursery room") and person(f)):
        return M
    if f["direction"] == "away" and f["people"] == 1 and (within(f["time"], "08:00", "09:00") or within(f["time"], "17:00", "18:00")):
        return B
    if f["direction"] == "away" and f["people"] == 1:
        return A
    return M


DEV4.append(P("e107", "nursery", "exit door", ["nursery room", "lobby"],
    "A child leaving alone (one person, going away from the camera) should alert, apart from drop-off 8-9 and pick-up 5-6pm when it's normal.",
    r107,
    [dict(zones=["nursery room"], direction="away"), dict(zones=["nursery room"], direction="away", time="08:00"),
     dict(zones=["nursery room"], direction="away", time="17:59"), dict(zones=["nursery room"], direction="away", time="18:00"),
     dict(zones=["nursery room"], direction="away", people=2), dict(zones=["nursery room"], direction="towards"),
     dict(zones=["lobby"], direction="away")],
    "child can't be seen; read as person alone; 'normal' = benign"))


def r108(f):
    if z(f, "rooftop") and person(f) and (f["weekday"] == "Sat" and tmin(f["time"]) >= 12 * 60 or f["weekday"] == "Sun" and tmin(f["time"]) < 12 * 60):
        return B
    if z(f, "rooftop") and person(f):
        return A
    return M


DEV4.append(P("e108", "hotel", "roof terrace", ["rooftop", "stairs"],
    "Roof terrace is only open from Saturday noon to Sunday noon. Anyone up there at any other time - alert.",
    r108,
    [dict(zones=["rooftop"], weekday="Sat", time="11:59"), dict(zones=["rooftop"], weekday="Sat", time="12:00"),
     dict(zones=["rooftop"], weekday="Sun", time="11:59"), dict(zones=["rooftop"], weekday="Sun", time="12:00"),
     dict(zones=["rooftop"], weekday="Wed"), dict(zones=["stairs"], weekday="Wed")],
    "window spans two days; open read as benign"))


def r109(f):
    if z(f, "hatch") and person(f) and f["upper"] == "yellow" and f["hivis"]:
        return B
    if z(f, "hatch") and person(f) and f["dwell_s"] > 30:
        return A
    return M


DEV4.append(P("e109", "server room", "cooling plant", ["hatch", "plant room"],
    "Anyone at the hatch for longer than half a minute - alert. Not the maintenance guys (yellow hi vis), never alert on them.",
    r109,
    [dict(zones=["hatch"], dwell_s=31), dict(zones=["hatch"], dwell_s=30), dict(zones=["hatch"], dwell_s=200, hivis=True, upper="yellow"),
     dict(zones=["hatch"], dwell_s=200, hivis=True), dict(zones=["hatch"], dwell_s=200, hivis=True, upper="green"), dict(zones=["plant room"], dwell_s=200)],
    "'them' = maintenance (yellow hi-vis)"))


def r110(f):
    if z(f, "level 2") and person(f) and f["dwell_s"] > 180:
        return A
    return M


DEV4.append(P("e110", "car park", "level 2", ["level 2", "lift"],
    "Level 2: tell me if a car's alarm is going off, or if someone is loitering between the cars for more than 3 minutes.",
    r110,
    [dict(zones=["level 2"], dwell_s=181), dict(zones=["level 2"], dwell_s=180), dict(zones=["level 2"], dwell_s=181, time="03:00"),
     dict(zones=["level 2"], label="car", dwell_s=5000), dict(zones=["lift"], dwell_s=500), dict(zones=["level 2", "lift"], dwell_s=200)],
    "car alarm is not a fact: product should flag that part; meaning covers loitering only (over 180 s)"))


def r111(f):
    if z(f, "orchard") and f["label"] in ("sheep", "horse", "cow"):
        return B
    if z(f, "orchard") and person(f) and ("backpack" in f["carries"] or "handbag" in f["carries"]) and f["weekday"] in ("Sat", "Sun"):
        return A
    return M


DEV4.append(P("e111", "farm", "orchard", ["orchard", "road"],
    "Weekends we get people nicking apples. Anyone in the orchard with a bag (rucksack or handbag) on a Saturday or Sunday, alert. Livestock in there is normal, dont worry about it.",
    r111,
    [dict(zones=["orchard"], carries=["backpack"], weekday="Sat"), dict(zones=["orchard"], carries=["handbag"], weekday="Sun"),
     dict(zones=["orchard"], carries=["backpack"], weekday="Fri"), dict(zones=["orchard"], weekday="Sat"), dict(zones=["orchard"], label="sheep"),
     dict(zones=["road"], carries=["backpack"], weekday="Sat")],
    "livestock = sheep/horse/cow"))


def r112(f):
    if z(f, "shutter") and person(f) and f["upper"] != "blue" and within(f["time"], "02:00", "04:30"):
        return A
    return M


DEV4.append(P("e112", "shop", "shutter", ["shutter", "road"],
    "The baker drops off between two and half four in the morning - he's always in blue. Anyone at the shutter during those hours in anything other than a blue top - alert.",
    r112,
    [dict(zones=["shutter"], time="02:00", upper="red"), dict(zones=["shutter"], time="02:00", upper="blue"), dict(zones=["shutter"], time="02:00"),
     dict(zones=["shutter"], time="04:30", upper="red"), dict(zones=["shutter"], time="04:29", upper="grey"), dict(zones=["road"], time="03:00", upper="red")],
    "baker in blue: no verdict (not said fine) -> model"))


def r113(f):
    if z(f, "sports hall") and person(f) and f["people"] > 30:
        return A
    if z(f, "sports hall") and person(f) and within(f["time"], "22:00", "06:00"):
        return A
    return M


DEV4.append(P("e113", "gym", "sports hall", ["sports hall", "foyer"],
    "fire limit is 30. alert if theres more than that in the sports hall, any time. and after 10pm alert on anyone at all in there.",
    r113,
    [dict(zones=["sports hall"], people=31), dict(zones=["sports hall"], people=30), dict(zones=["sports hall"], time="22:00"),
     dict(zones=["sports hall"], time="06:00"), dict(zones=["sports hall"], time="05:59"), dict(zones=["foyer"], people=40)],
    "'after 10pm' runs to 06:00; 'that' = 30"))


def r114(f):
    if z(f, "wash bay") and f["label"] in VEH and f["dwell_s"] >= 1200:
        return A
    if z(f, "wash bay") and f["label"] in VEH:
        return B
    return M


DEV4.append(P("e114", "petrol station", "car wash", ["wash bay", "vacuum"],
    "Cars in the wash bay are fine unless it's been in there 20 minutes or longer - then it's probably broken down, alert.",
    r114,
    [dict(zones=["wash bay"], label="car", dwell_s=1200), dict(zones=["wash bay"], label="car", dwell_s=1199),
     dict(zones=["wash bay"], label="truck", dwell_s=3000), dict(zones=["wash bay"], dwell_s=3000), dict(zones=["vacuum"], label="car", dwell_s=3000)],
    "'it' = the car; vehicles generally"))


def r115(f):
    if z(f, "snug") and person(f) and f["weekday"] in ("Mon", "Tue") and not within(f["time"], "17:00", "23:00"):
        return A
    if z(f, "snug") and person(f) and not within(f["time"], "12:00", "23:00") and f["weekday"] not in ("Mon", "Tue"):
        return A
    if z(f, "snug") and person(f):
        return B
    return M


DEV4.append(P("e115", "pub", "snug", ["snug", "garden"],
    "Opening hours: Mon & Tue 5pm-11pm, rest of the week noon to 11. Anyone in the snug when we're closed, alert; when we're open, that's customers, fine.",
    r115,
    [dict(zones=["snug"], weekday="Mon", time="16:59"), dict(zones=["snug"], weekday="Mon", time="17:00"), dict(zones=["snug"], weekday="Tue", time="23:00"),
     dict(zones=["snug"], weekday="Wed", time="12:00"), dict(zones=["snug"], weekday="Wed", time="11:59"), dict(zones=["snug"], weekday="Sun", time="22:59"),
     dict(zones=["garden"], weekday="Mon", time="03:00")],
    "per-day hours"))


def r116(f):
    if z(f, "plot 7") and person(f):
        if within(f["time"], "06:00", "20:00") and not (f["upper"] == "purple"):
            return B
        return A
    return M


DEV4.append(P("e116", "allotment", "plot 7", ["plot 7", "water trough"],
    "I'm on my plot from 6am to 8pm. Anyone on plot 7 outside those hours: alert. Inside those hours, don't alert - but do if they're in a purple top, that's the guy we've had trouble with.",
    r116,
    [dict(zones=["plot 7"], time="06:00", upper="green"), dict(zones=["plot 7"], time="05:59", upper="green"), dict(zones=["plot 7"], time="20:00"),
     dict(zones=["plot 7"], time="10:00", upper="purple"), dict(zones=["plot 7"], time="10:00"), dict(zones=["water trough"], time="23:00")],
    "'but do if' overrides; upper unknown by day -> model"))


DEV4.append(P("e117", "warehouse", "yard", ["yard"],
    "Alert on anyone in the yard on the 31st of every month, between 9 and 5.",
    refuse="the date is not a fact (only weekday and time); the only rule needs it"))


def r118(f):
    if z(f, "nurses station") and person(f) and within(f["time"], "02:00", "06:00") and f["people"] >= 2:
        return B
    if z(f, "nurses station") and person(f) and within(f["time"], "02:00", "06:00") and f["people"] == 1 and f["dwell_s"] >= 600:
        return A
    return M


DEV4.append(P("e118", "hospital ward", "nurses station", ["nurses station", "corridor"],
    "Small hours (2am to 6am): a single person at the nurses station on their own for ten minutes+ - possible patient at the desk, alert. Don't alert if they're with someone else.",
    r118,
    [dict(zones=["nurses station"], time="02:00", dwell_s=600), dict(zones=["nurses station"], time="01:59", dwell_s=600),
     dict(zones=["nurses station"], time="05:59", dwell_s=599), dict(zones=["nurses station"], time="03:00", dwell_s=900, people=2),
     dict(zones=["nurses station"], time="06:00", dwell_s=900), dict(zones=["corridor"], time="03:00", dwell_s=900)],
    "'they' = the person; with someone else (people>=2) in the window -> benign"))


def r119(f):
    if z(f, "garden path") and person(f) and not f["hivis"] and f["direction"] == "towards" and within(f["time"], "18:00", "22:00"):
        return A
    return M


DEV4.append(P("e119", "care home", "garden path", ["garden path", "car park"],
    "In the evening, alert me to people coming up the garden path towards the building who are not in hi-vis (our night staff wear hi-vis).",
    r119,
    [dict(zones=["garden path"], direction="towards", time="18:00"), dict(zones=["garden path"], direction="towards", time="21:59"),
     dict(zones=["garden path"], direction="towards", time="22:00"), dict(zones=["garden path"], direction="towards", time="19:00", hivis=True),
     dict(zones=["garden path"], direction="away", time="19:00"), dict(zones=["car park"], direction="towards", time="19:00")],
    "evening 18-22"))


def r120(f):
    if z(f, "yard") and f["label"] in VEH and not (wkday(f) and within(f["time"], "07:00", "19:00")):
        return A
    if z(f, "yard") and person(f) and not f["hivis"]:
        return A
    if z(f, "yard"):
        return B
    return M


DEV4.append(P("e120", "building site", "material yard", ["yard", "hoarding gate"],
    "Rules for the yard:\n- any vehicle in the yard outside weekday hours (7am-7pm) -> alert\n- anyone in there without hi-vis -> alert\n- anything else in the yard is fine",
    r120,
    [dict(zones=["yard"], label="truck", time="06:59"), dict(zones=["yard"], label="truck", time="07:00"), dict(zones=["yard"], label="car", weekday="Sun"),
     dict(zones=["yard"]), dict(zones=["yard"], hivis=True), dict(zones=["yard"], hivis=None), dict(zones=["hoarding gate"])],
    "bulleted list"))

# ---------------------------------------------------------------- extra edge cases (appended to reach 6+ per policy)
_EXTRA = {
    "e003": [dict(zones=["car park", "beer garden"], people=3, dwell_s=121, time="23:00")],
    "e004": [dict(zones=["server room", "corridor"], hivis=False, time="03:00")],
    "e005": [dict(zones=["field"], time="02:00")],
    "e011": [dict(zones=["bay", "office"], hivis=False, time="02:00")],
    "e012": [dict(zones=["ward corridor"], time="05:59", dwell_s=301, label="cat")],
    "e017": [dict(zones=["aisle", "till"], carries=["knife"], label="person", time="03:00")],
    "e020": [dict(zones=["gym floor"], time="02:00", label="dog")],
    "e021": [dict(zones=["stacks"], dwell_s=1801, time="02:00"), dict(zones=["stacks", "desk"], dwell_s=10)],
    "e024": [dict(zones=["counter"], people=12, time="07:00"), dict(zones=["counter", "tables"], people=3)],
    "e027": [dict(zones=["rack room"], carries=["suitcase"], direction="away")],
    "e030": [dict(zones=["bar"], time="05:00", label="cat")],
    "e032": [dict(zones=["bike shed"], label="motorcycle", dwell_s=300)],
    "e035": [dict(zones=["storeroom"], people=2, hivis=False, time="03:00", label="dog")],
    "e037": [dict(zones=["lockers"], carries=["handbag", "cell phone"], time="22:00")],
    "e041": [dict(zones=["boatyard"], time="05:59", dwell_s=60, label="dog")],
    "e043": [dict(zones=["drive"], label="bus"), dict(zones=["drive"], label="bicycle")],
    "e044": [dict(zones=["pharmacy"], time="03:00", label="cat")],
    "e045": [dict(zones=["lounge"], direction="away", time="21:59")],
    "e049": [dict(zones=["terrace"], carries=["bottle"], time="03:00")],
    "e050": [dict(zones=["stairwell"], people=2, time="05:59", label="dog")],
    "e054": [dict(zones=["cellar"], upper="white", lower="blue", time="03:00", weekday="Sun")],
    "e057": [dict(zones=["plots"], time="23:00", label="cat")],
    "e058": [dict(zones=["weights"], time="05:59", dwell_s=1500)],
    "e062": [dict(zones=["gate"], upper="green", direction="away")],
    "e064": [dict(zones=["bay 2"], dwell_s=100, hivis=False, time="03:00")],
    "e065": [dict(zones=["quay"], time="22:00", carries=["bottle", "handbag"])],
    "e067": [dict(zones=["aisle"], people=1, weekday="Sun", label="cat")],
    "e068": [dict(zones=["churchyard"], time="02:00")],
    "e069": [dict(zones=["doorstep"], dwell_s=5, carries=["umbrella"])],
    "e070": [dict(zones=["reading room"], label="cat"), dict(zones=["reading room", "foyer"], carries=["cell phone"])],
    "e072": [dict(zones=["ticket office"], people=2, time="16:59")],
    "e073": [dict(zones=["paddock"], label="sheep")],
    "e078": [dict(zones=["toddler room"], time="12:00", people=20)],
    "e079": [dict(zones=["stairs"], direction="towards")],
    "e082": [dict(zones=["compost"], label="cat", dwell_s=5000)],
    "e085": [dict(zones=["forecourt"], hivis=True, upper="yellow", time="02:00")],
    "e094": [dict(zones=["bedside"], people=4, time="03:00"), dict(zones=["bedside"], people=1), dict(zones=["bedside"], people=3, label="dog")],
    "e098": [dict(zones=["pontoon"], label="bird", dwell_s=5000)],
    "e102": [dict(zones=["fire door"], direction="left")],
    "e103": [dict(zones=["landing"], time="04:59"), dict(zones=["landing"], carries=["bottle"])],
    "e104": [dict(zones=["aisle 4"], dwell_s=241, label="dog")],
    "e105": [dict(zones=["reception"], time="23:00", label="cat")],
    "e106": [dict(zones=["churchyard"], time="05:59", people=2)],
    "e114": [dict(zones=["wash bay"], label="bus", dwell_s=1201)],
}
for _d in DEV4:
    if _d["id"] in _EXTRA:
        _d["cases"] = _d["cases"] + _EXTRA[_d["id"]]
