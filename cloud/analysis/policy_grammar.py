"""The grammar of an operator's policy words (lark, Earley): every word of a sentence is a token, and a sentence
parses only when each token is consumed by a rule that gives it a meaning (policy_words.py reads the tree).
A word the grammar does not know is its own token type, T_WORD, which only a zone name may use; so "not",
"isn't" (read "is not"), "without", "never", "nobody", "unless", "except", "only" ... are consumed by the rules
below that give them their meaning, or the sentence does not parse and is NOT COMPILED.

The sentence kinds: a verdict first ("alert if ...", "ignore ..."), a verdict after its subject ("anyone at the
gate is an alert", "staff in hi-vis may be in the yard"), "nobody should be ...", "only X may be ...", "anyone
else (there) is ...", "otherwise ...", "if ..., alert", and the opening hours ("we are open 9 to 5").
"""

GRAMMAR = r"""
start: sent (joiner sent | ","? otherwise)*
joiner: "," | ";" | ","? ("but" | "whereas" | "while" | "and")
?sent: lead | copular | nobody | else_sent | otherwise | defn | if_then | moot | note
// --- what the camera is: no rule
note: ("an" | "the" | "this" | "it" "is" "an" | "this" "is" "an")? ("indoor" | "outdoor") "camera"

// --- "hi-vis doesn't matter": a fact no rule may read
moot: fact_word ("does" "not" "matter" | "is" "irrelevant" | "makes" "no" "difference")
fact_word: "hivis" -> moot_hivis
         | ("the" "time" | "time" "of" "day") -> moot_time
         | ("direction" | "which" "way" "they" "go") -> moot_direction

// --- verdict first: "alert (me) (only) if/on ...", "ignore ...", "never alert on ..."
lead: (body ","?)? alert_head body? exception?              -> alert_lead
    | (body ","?)? benign_head body? exception?             -> benign_lead
    | alert_head ("for" | "about")? zone_body exception?                 -> alert_lead
    | benign_head ("with" | "for" | "about")? zone_body exception?       -> benign_lead
    | alert_head body _or_clause+   -> alert_lead_or
    | benign_head body _or_clause+  -> benign_lead_or
_or_clause: ","? "or" ("if" | "when" | "whenever") body | "," ("or" | "and" ("on" | "for" | "about")) sbody
alert_head: please? "always"? alert_verb me? only? urgent? please? | please? only alert_verb me? urgent? please?
// a zone the camera is configured with, named alone right after the verdict, is that place: "don't bother with
// the drive", "ignore the yard", "don't alert for the kitchen" (a word no zone has stays a word: "the pumps")
zone_body: zone_alone item* -> body
zone_alone: zone_one -> place_in
zone_one: "the"? T_ZONE -> zone_ref
please: "please" | "pls" | "plz"
urgent: "immediately" | "straight" "away" | "right" "away" | "at" "once" | "now"
alert_verb: "alert" | "alert" me "to" | "alarm" | "notify" | "warn" | "tell" | "flag" | "report"
          | ("send" | "raise" | "give" | "trigger" | "sound") me? ("an" | "the")? ("alert" | "alarm")
          | "i" "want" ("an" | "to" "be") ("alert" | "alerted") | "let" me "know"
          | "i" ("want" | "need") "to" ("know" | "hear")
          | ("call" | "ring" | "text" | "ping" | "phone" | "page" | "message" | "wake") me "up"?
benign_head: ("ignore" | "do" "not" (alert_verb | "worry" "about" | "bother" ("alerting" | "with")) | "never" alert_verb
           | "do" "not" "bother" me ("about" | "with")? | "i" "do" "not" ("mind" | "care" "about")
           | "no" ("alert" | "alerts" | "alarm" | "alarms") | "no" "need" "to" alert_verb) me? only?
me: "me" | "us"
only: "only"

// --- the verdict after its subject: "anyone at the gate is an alert", "cars are fine"
copular: only? body alert_pred body? exception?      -> alert_after
       | only? body benign_pred only? body? exception? -> benign_after
       | body ","? pronoun alert_pred                   -> alert_after
       | body ","? pronoun benign_pred                  -> benign_after
       | body ","? model_pred                           -> model_after
       | only? body dash_alert exception?               -> alert_after
       | only? body dash_benign exception?              -> benign_after
pronoun: "it" | "that" | "this"
model_pred: ("is" | "are") ("left" "to" | "up" "to") judge | "use" "your" judgement | "ask" "the" "model"
          | "leave" ("it" | "them" | "that") "to" judge | "go" "to" "the" "model"
judge: "judgement" | "judgment" | "the" "model" | "you" | "your" judgement | "the" "model's" judgement
judgement: "judgement" | "judgment" | "discretion"
alert_pred: be "always"? ("an" | "a")? alert_noun
          | ("should" | "will" | "must") ("trigger" | "raise" | "get" | "cause") ("an" | "a")? alert_noun
          | ("means" | "mean") ("an" | "a")? alert_noun | ("counts" | "count") "as" ("an" | "a")? alert_noun
          | be ("not" | "never") ("allowed" | "permitted" | "welcome" | "ok" | "okay" | "fine")
          | ("should" | "must" | "may") ("not" | "never") "be"
          | be ("suspicious" | "trespassing" | "intruders" | "an" "intruder" | "a" "problem" | "a" "concern")
          | ("should" | "must" | "will") "be" ("reported" | "flagged")
          | ("should" | "must" | "will")? ("trigger" | "triggers" | "raise" | "raises" | "get" | "gets" | "need"
             | "needs" | "deserve" | "deserves" | "warrant" | "warrants" | "cause" | "causes") ("an" | "a")? alert_noun
          | ("should" | "must" | "will") alert_verb me? urgent?
alert_noun: "alert" | "alarm" | "alerts" | "alarms"
dash_alert: dash ("an" | "a")? alert_noun -> alert_pred
          | dash alert_verb me? urgent? -> alert_pred
          | dash "yes" ","? ("an" | "a")? alert_noun -> alert_pred
// a verdict after a dash, an arrow or "=": "dogs on the pitch - alert", "cars at the pumps = fine"
dash: "-" | ","  // "=" and "->" are read as "-", ":" as "," (policy_lexicon.tokens): "bikes in the shed: fine"
benign_pred: be "always"? benign_adj
           | be "always"? ("family" | "customers" | "staff" | "guests" | "residents" | "neighbours"
                           | "workers" | "employees" | "expected" | "deliveries")
           | ("may" | "can") "be"
           | ("do" | "does") "not" "bother" me | be "of"? "no" "concern" | ("do" | "does") "not" "worry" me
           | ("can" | "should" | "may") "be" "ignored" | be "to" "be" "ignored"
           | ("may" | "can") "come" "and" "go"
           | be ("not" | "never") (("an" | "a")? alert_noun | "a" "problem" | "suspicious" | "a" "concern")
           | ("need" "no" | "do" "not" "need" ("an" | "a")) alert_noun
           | ("should" | "must" | "will")? ("not" | "never") ("trigger" | "raise" | "cause") ("an" | "a")? alert_noun
           | never_verb ("an" | "a")? alert_noun
dash_benign: dash benign_mark -> benign_pred
benign_mark: "no" alert_noun (","? ("ever" | "at" "all"))? | benign_adj | "ignore" ("it" | "them" | "those")?
           | "do" "not" alert_verb me? ("about" ("it" | "them"))? | "never" alert_verb? me?
           | "not" ("an" | "a") alert_noun
never_verb: ("never" | "do" "not" | "does" "not" | ("should" | "must" | "will") ("not" | "never")) ("need" | "needs"
          | "get" | "gets" | "deserve" | "deserves" | "warrant" | "warrants" | "require" | "requires" | "trigger"
          | "triggers" | "cause" | "causes" | "raise" | "raises")
be: "is" | "are" | "is" "always" | "are" "always"
benign_adj: "fine" | "ok" | "okay" | "allowed" | "permitted" | "normal" | "welcome" | "benign" | "harmless"
          | "no" "problem" | "nothing" "to" "worry" "about" | "not" "a" "problem" | "to" "be" "expected"

// --- "nobody should be on the roof", "no cars in the bus lane"
nobody: nobody_subj exception? modal body exception?
      | nobody_subj body? pos_alert exception?      -> nobody_alerts
pos_alert: ("should" | "must" | "will" | "would" | "can")? "ever"? ("trigger" | "triggers" | "cause" | "causes"
           | "raise" | "raises" | "get" | "gets" | "need" | "needs" | "deserve" | "deserves") ("an" | "a")? alert_noun
         | ("is" | "are") ("an" | "a")? alert_noun
      | "there" ("should" | "must") "be" nobody_subj exception? body exception?
nobody_subj: "nobody" | "no" "one" | "no" "person" | "no" "people" | "no" "visitors" | "no" label_noun
modal: ("should" | "must" | "may" | "can" | "is" "allowed" "to" | "are" "allowed" "to" | "is" "permitted" "to") "be"?
     | "is" "allowed" | "are" "allowed" | "is" | "are" | "allowed"

// --- "anyone else (there) is an alert", "everything else is fine"
else_sent: else_subj body? alert_pred body?    -> else_alert
         | else_subj body? benign_pred body?   -> else_benign
         | else_subj body? ","? model_pred     -> else_model
         | else_subj body? dash_alert          -> else_alert
         | else_subj body? dash_benign         -> else_benign
         | alert_head ("on" | "for" | "about" | "if")? else_subj body?   -> else_lead_alert
         | benign_head ("on" | "for" | "about" | "if")? else_subj body?  -> else_lead_benign
         | else_subj body? "," alert_head                     -> else_lead_alert
         | else_subj body? "," benign_head                    -> else_lead_benign
         | ("that" "is" "it" ("-" | ",")?)? "nothing" "else" ("matters" | "counts")?  -> nothing_else_alone
else_subj: "nothing" "else" -> nothing_else
         | ("anyone" | "anybody" | "everyone" | "everybody" | "someone" | "somebody" | "anything" | "everything"
           | "all") "else" | "all" "others" | "others" | "the" "rest" | "all" "other" ("people" | "cases" | "times")
         | "any" "other" ("person" | "people" | "case" | "time") | "other" ("people" | "times" | "cases")

// --- "otherwise, alert"; "in all other cases it is fine"
otherwise: otherwise_word ","? verdict_word
otherwise_word: "otherwise" | "else" | "in" ("all" | "any") "other" "cases" | "at" ("all" | "any") "other" "times"
verdict_word: ("it" "is" | "that" "is")? ("an" | "a")? alert_noun   -> else_word_alert
            | alert_verb me?                                          -> else_word_alert
            | ("it" "is" | "that" "is" | "they" "are")? benign_adj    -> else_word_benign
            | ("ignore" ("it" | "them")? | "do" "not" alert_verb me? | "no" alert_noun | "nothing")  -> else_word_benign
            | ("ask" ("the" "model")? | "use" "your" judgement | "leave" ("it" | "them") "to" judge
               | ("it" "is" | "that" "is")? "up" "to" judge)         -> else_word_model

// --- "if someone is on the roof at night, alert me"
if_then: ("if" | "when" | "whenever") body ","? "then"? then_verdict
then_verdict: (alert_verb me? | ("it" "is" | "that" "is") ("an" | "a")? alert_noun)     -> then_alert
            | (alert_verb ("it" | "them") | alert_verb me? "about" ("it" | "them"))     -> then_alert
            | (("it" "is" | "that" "is" | "they" "are") benign_adj | "ignore" ("it" | "them"))   -> then_benign

// --- opening hours: "we are open 9 to 5", "opening hours are 08:00-18:00"
defn: ("we" "are" | "the" (T_WORD | T_ZONE | T_OTHER) "is" | "it" "is")? "open" hours_span     -> defn_open
    | hours_words ("are" | "is" | "run" "from"?)? hours_span                      -> defn_open
// hours said of someone or something, with no verdict: what later words call "those hours" ("the cleaners are
// here from 6pm to 9pm. ... outside those hours"); NOT COMPILED where no later words use them (policy_words.py)
    | said_desc+ hours_span                                                       -> defn_said
// who a role is, by its look, with no verdict: "our staff wear green tops", "the guards are always in hi-vis";
// later words naming the role read that look (NOT COMPILED where none does)
    | (det | "our" | "my")? role_noun+ ("are" | "is")? "always"? wear               -> defn_role
said_desc: T_WORD | T_OTHER | T_ZONE | role_noun | "the" | "our" | "my" | "a" | "an" | "we" | "is" | "are"
         | "in" | "on" | "at"
hours_words: ("opening" | "business" | "working" | "office" | "shop" | "store" | "open" | "school" | "trading"
             | T_ZONE) "hours"                      -> hours_open
           | (T_WORD | T_OTHER) "hours"              -> hours_named
hours_span: range (","? day_mod)?
hours_which: "," | ","? ("which" "are" | "that" "is")

// --- a clause's subject and conditions, in any order
body: item+
sbody: subject item*  -> body
?item: subject | mod | any_mod | link | only | presence | "there" -> there | moot_here
    | ("in" | "out" | "up" | "down" | "over" | "at" | "on" | "inside") "there" -> there
    | ("at" | "on" | "in" | "inside") "it" -> there
moot_here: "hivis" "or" "not" | "with" "or" "without" "hivis" | "regardless" "of" "hivis" | "hivis" "or" "no" "hivis"
         | "whether" "or" "not" "they" ("are" | "wear") "wearing"? "hivis"
link: "and" | "," | "who" | "that" | "which" | "is" | "are" | "if" | "when" | "whenever" | "while" | "for" | "about"
    | "ever" | "at" "all" | "completely" | "whatsoever" | "at" "once"
    | "on" | "there" "is" | "there" "are" | "it" "is" | "they" "are" | "he" "or" "she" "is" | "of"
presence: "seen" | "spotted" | "detected" | "present" | "appears" | "appear" | "shows" "up" | "show" "up"
        | "turns" "up" | "turn" "up" | "in" "view" | "on" "camera" | "visible"
any_mod: or_member (","? "or" or_member)+
?or_member: mod | when_mod when_mod+  -> when_all
?when_mod: time_mod | day_mod | night_of
part_list: part ((","? ("and" | "or") | ",") part)+
and_list: or_member ("," or_member)* ","? "and" or_member
?part: ("in" "the" | "during" "the")? ("morning" | "mornings")   -> morning
     | ("in" "the" | "during" "the")? ("afternoon" | "afternoons") -> afternoon
     | ("in" "the" | "during" "the")? ("evening" | "evenings")     -> evening
     | ("at" | "during" "the")? ("night" | "nights")                -> night

subject: det? person_noun                       -> person
       | det? person_noun (("and" | "or" | ",") det? label_noun)+   -> label
       | det? label_noun (("and" | "or" | ",") det? label_noun)* ","? ("and" | "or") det? person_noun   -> label
       | det? label_noun minus_word det? label_noun (("and" | "or" | ",") det? label_noun)*   -> label_minus
       | det? label_noun (("and" | "or" | ",") det? label_noun)*   -> label
       | det? (T_WORD | T_OTHER)? role_noun+    -> role
       | count
minus_word: "other" "than" | "except" | "but" "not" | "apart" "from" | "besides"
det: "a" | "an" | "any" | "every" | "all" | "some" | "the" | "those" | "these"
person_noun: "anyone" | "anybody" | "someone" | "somebody" | "everyone" | "everybody" | "person" | "people"
           | "persons" | "visitor" | "visitors" | "man" | "men" | "woman" | "women" | "human" | "humans"
           | "individual" | "individuals" | "pedestrian" | "pedestrians" | "one" | "those" | "them" | "whoever"
           | "they"
label_noun: "car" | "cars" | "vehicle" | "vehicles" | "truck" | "trucks" | "lorry" | "lorries" | "dog" | "dogs"
          | "cat" | "cats" | "animal" | "animals" | "pet" | "pets" | "bicycle" | "bicycles" | "bike" | "bikes"
          | "motorbike" | "motorbikes" | "motorcycle" | "motorcycles" | "bird" | "birds" | "bus" | "buses"
          | "horse" | "horses" | "sheep" | "cow" | "cows"
role_noun: "staff" | "employee" | "employees" | "worker" | "workers" | "builder" | "builders" | "contractor"
         | "contractors" | "cleaner" | "cleaners" | "customer" | "customers" | "shopper" | "shoppers" | "guest"
         | "guests" | "resident" | "residents" | "family" | "neighbour" | "neighbours" | "courier" | "couriers"
         | "postman" | "postmen" | "delivery" | "deliveries" | "driver" | "drivers" | "tradesmen" | "security"
         | "guard" | "guards" | "kids" | "children" | "child" | "members" "of" "staff" | "member" "of" "staff"
         | "crew" | "operatives" | "engineers" | "visitors" "with" "badges" | "pharmacist" | "pharmacists" | "nurse"
         | "nurses" | "doctor" | "doctors" | "teacher" | "teachers" | "picker" | "pickers" | "porter" | "porters"
         | "chef" | "chefs" | "officer" | "officers" | "technician" | "technicians" | "mechanic" | "mechanics"
         | "gardener" | "gardeners" | "labourer" | "labourers" | "volunteer" | "volunteers" | "steward"
         | "stewards" | "operative" | "engineer" | "lad" | "lads" | "farmhand" | "farmhands" | "caretaker"
         | "caretakers" | "janitor" | "janitors" | "receptionist" | "receptionists"

count: cmp num people_word                       -> count_cmp
     | cmp num ("and" | "but" | "," | "yet")? cmp num people_word   -> count_range
     | cmp num people_word ("but" | "yet") cmp num people_word   -> count_range
     | num "or" ("more" | "fewer" | "less") people_word   -> count_or
     | num people_word "or" ("more" | "fewer" | "less")   -> count_or_after
     | ("a" | "any")? "group" "of" (cmp num | num "or" "more") people_word?   -> count_group
     | "groups" "of" (cmp num | num "or" "more") people_word?      -> count_group
     | ("alone" | "on" ("their" | "his" | "her") "own" | "a" "single" "person" | "a" "lone" "person")  -> count_alone
people_word: "people" | "persons" | "person" | "visitors" | "men" | "individuals"

cmp: ("more" "than" | "over" | "longer" "than" | "above") -> gt
   | ("at" "least" | "no" "less" "than" | "no" "fewer" "than") -> ge
   | ("less" "than" | "fewer" "than" | "under" | "shorter" "than" | "below") -> lt
   | ("no" "more" "than" | "no" "longer" "than" | "at" "most" | "up" "to" | "within") -> le
   | "exactly" -> eq
num: T_NUM | "a" | "an" | "one" | "half" ("a" | "an") -> half | T_NUMWORD

?mod: place | time_mod | day_mod | night_of | dwell | direction | wear | carry | part_list | and_list

// --- places: the camera's zones, or "the <word(s)>" after a place word
place: place_prep zone_ref (("or" | "and" | ",") "the"? zone_ref)*      -> place_in
     | leave_word zone_ref                               -> leave_place
     | enter_word zone_ref                               -> enter_place
     | pass_word zone_ref ("or" "the"? zone_ref)*        -> place_in
     | neg_place zone_ref                                -> place_out
place_prep: "in" | "at" | "on" | "near" | "by" | "inside" | "into" | "within" | "around" | "onto" | "through"
          | "in" "front" "of" | "in" "or" "near" | "at" "or" "near" | "next" "to" | "along"
// moving through or about a place, no way said: the place only ("goes through the side door", "uses the back
// door", "walking on the pontoon"; "walking along / past" is passing, "walking in" entering)
pass_word: ("goes" | "go" | "going" | "walks" | "walk" | "walking" | "passes" | "pass" | "passing") "through"
         | "uses" | "use" | "using"
         | ("walking" | "walks" | "walk" | "wandering" | "wanders" | "wander") ("on" | "around" | "about" | "across"
           | "round")
enter_word: "entering" | "enters" | "enter" | ("going" | "goes" | "go" | "walking" | "walks" | "walk" | "coming"
          | "comes" | "come" | "getting" | "gets" | "get" | "heading" | "heads") "into"
leave_word: "leaving" | "leaves" | "leave" | "exiting" | "exits" | "exit" | "going" "out" "of" | "walking" "out" "of"
          | "coming" "out" "of" | ("comes" | "come" | "goes" | "go" | "walks" | "walk" | "gets" | "getting") "out" "of"
neg_place: "not" place_prep | "outside" "of"? | "away" "from" | "anywhere" "but" place_prep?
         | "anywhere" "except" place_prep? | "anywhere" "other" "than" place_prep?
// a side word names a place with its noun: "the front door", "the top gate"
zone_ref: ("the" | "a" | "an" | "any" | "either" | "each")? T_ZONE ("zone" | "area")?
        | ("the" | "our" | "my" | "their") zone_side? T_WORD T_WORD? ("zone" | "area")?
?zone_side: "front" | "top" | "bottom" | "left" | "right"

// --- times of day
time_mod: ("at"? "night" | "at" "night" "time" | "nighttime" | "night" "time" | "overnight"
            | "during" "the" "night" | "in" "the" "night" | "at" "nights" | "nights")  -> night
        | ("in" "the" | "during" "the")? ("morning" | "mornings")          -> morning
        | ("in" "the" | "during" "the")? ("afternoon" | "afternoons")      -> afternoon
        | ("in" "the" | "during" "the")? ("evening" | "evenings")          -> evening
        | (("during" "the" | "in" "the" | "by")? ("day" | "daytime") | "during" "daytime" | "in" "daylight"
            | "during" "daylight" "hours")                                  -> daytime
        | ("after" | "from" | "since" | "past") clock "onwards"?          -> after
        | clock ("onwards" | "or" "later" | "and" "later")                 -> after
        | ("before" | "until" | "till" | "til" | "up" "until") clock               -> before
        | range                                                             -> within
        | day_part ","? range                                               -> apposed
        | "outside" "of"? "the"? range                                     -> outside
        | "not" range                                                       -> outside
        | "outside" "of"? "the"? hours_words hours_which? hours_span          -> outside_hours
        | ("during" | "in" | "within") "the"? hours_words hours_which? hours_span -> during_hours
        | (("during" | "in" | "within" | "at")? ("those" | "these" | "the" "same") ("hours" | "times")
            | "at" "that" "time" | "at" "the" "same" "time")                                -> those_in
        | ("outside" "of"? ("those" | "these" | "the" "same") ("hours" | "times") | "at" "any"? "other" "time"
            | "at" "other" "times" | "at" "another" "time")                                 -> those_out
        | ("outside" "of"? "the"? hours_words | "after" ("closing" | "hours" | "close" | "closing" "time")
            | ("after" | "once" | "when") ("we" "close" | "it" "closes" | "the" (T_WORD | T_ZONE | T_OTHER) "closes"
            | "the" (T_WORD | T_ZONE | T_OTHER) "has" "closed" | "closing") | "out" "of" "hours"
            | ("when" | "while") ("we" "are" | "it" "is"
            | "the" (T_WORD | T_ZONE | T_OTHER) "is") "closed")                           -> closed
        | (("during" | "in" | "within") "the"? hours_words | ("when" | "while") ("we" "are" | "it" "is"
            | "the" (T_WORD | T_ZONE | T_OTHER) "is") "open")                             -> opened
        | ("at" "any" "time" | "any" "time" | "anytime" | "at" "all" "times" | "day" "or" "night"
            | "always" | "day" "and" "night" | "around" "the" "clock")      -> any_time
day_part: ("at"? "night" | "overnight" | "during" "the" "night" | "nighttime" | "at" "night" "time") -> night
        | ("in" "the" | "during" "the")? ("morning" | "mornings")            -> morning
        | ("in" "the" | "during" "the")? ("afternoon" | "afternoons")        -> afternoon
        | ("in" "the" | "during" "the")? ("evening" | "evenings")            -> evening
        | ("during" "the" | "in" "the")? ("day" | "daytime")                -> daytime
        | ("during" "the" | "in" "the" | "the")? work_word "day"             -> workday
work_word: "school" | "working" | "business" | "work" | "office" | "shop"
range: ("between" | "from")? clock ("-" | "to" | "and" | "until" | "till" | "til" | "through") clock
clock: (T_NUM | T_CLOCK | T_NUM "oclock") ampm?    -> clock_num
     | T_NUMWORD ampm?                          -> clock_word
     | ("noon" | "midday")                    -> noon
     | "midnight"                             -> midnight
     | "half" "past"? (T_NUM | T_NUMWORD) ampm?    -> half_past
     | "quarter" "past" (T_NUM | T_NUMWORD) ampm? -> quarter_past
     | "quarter" "to" (T_NUM | T_NUMWORD) ampm?   -> quarter_to
     | ("half" "past" | "quarter" "past" | "quarter" "to") "midnight"  -> by_midnight
ampm: ("am" | "in" "the" "morning" | "the" "next" "morning" | "next" "morning") -> am
    | ("pm" | "in" "the" "evening" | "at" "night" | "in" "the" "afternoon") -> pm

// --- days: "on weekdays", "at the weekend", "Monday to Friday", "Friday or Saturday night"
day_mod: ("on" | "at" | "during" | "over" | "every" | "for" | "on" "a" | "at" "a" | "a")? "the"? day_set
       | ("during" | "in" | "through" | "throughout") "the" week_set
// "the week" is the working week only after "during"/"in": "the rest of the week" is the days not named
// (a complement this grammar does not take), never Monday to Friday
week_set: "week" -> weekdays
day_set: ("weekdays" | "weekday" | "workdays" | "working" "days" | "week" "days")   -> weekdays
       | ("weekends" | "weekend")                                                    -> weekend
       | day_list                                                                    -> days
       | "from"? T_DAY ("-" | "to" | "through" | "thru" | "until" | "till") T_DAY         -> day_span
       | "between" T_DAY "and" T_DAY                                                     -> day_span
       | ("every" | "any") "day" | "all" "week" | "seven" "days" "a" "week"             -> every_day
day_list: T_DAY (","? ("and" | "or" | ",") T_DAY)*
night_of: ("on" | "every")? day_list ("night" | "nights")
        | ("on" | "every")? (day_list | set_days) ("evening" | "evenings")  -> evening_of
        | ("on" | "every")? (day_list | set_days) ("morning" | "mornings")  -> morning_of
        | ("on" | "every")? (day_list | set_days) ("afternoon" | "afternoons")  -> afternoon_of
set_days: "weekday" -> weekday_set
        | "weekend" -> weekend_set

// --- how long: "stays longer than 30 s", "for at least 2 minutes", "for 5 minutes or more"
dwell: dwell_verb                                           -> dwell_verb
     | "for"? cmp num unit                                 -> dwell_cmp
     | "for"? num unit "or" ("more" | "longer")            -> dwell_or_more
     | "for"? cmp num unit "and" "a" "half"                -> dwell_cmp_half
     | "for"? num unit "and" "a" "half" "or" ("more" | "longer")   -> dwell_or_more_half
     | "for"? num unit "or" ("less" | "shorter")           -> dwell_or_less
     | "for"? cmp num unit ("but" | "and") cmp num unit    -> dwell_both
     | "for"? cmp "that"                                   -> dwell_that
dwell_verb: "stays" | "stay" | "staying" | "stayed" | "lingers" | "linger" | "lingering" | "loiters" | "loiter"
          | "loitering" | "waits" | "wait" | "waiting" | "remains" | "remain" | "remaining" | "hangs" "around"
          | "hang" "around" | "hanging" "around" | "hangs" "round" | "hang" "round" | "hanging" "round"
          | "stands" | "stand" | "standing" | "dwells" | "is" "there"
          | "spends" | "spend" | "spending" | "stays" "there" | "stay" "there" | ("has" | "have") "been" "there"?
          | "are" "there" | "is" "seen" | "hangs" "about" | "hanging" "about" | "sits" | "sitting" | "sit"
unit: ("s" | "sec" | "secs" | "second" | "seconds") -> seconds
    | ("m" | "min" | "mins" | "minute" | "minutes") -> minutes
    | ("h" | "hr" | "hrs" | "hour" | "hours")       -> hours

// --- which way: "coming in", "leaving", "heading left"
direction: ("entering" | "enters" | "enter" | "coming" "in" | "comes" "in" | "come" "in" | "arriving" | "arrives"
           | "arrive" | "approaching" | "approaches" | "approach" | "walking" "in" | "walks" "in" | "going" "in"
           | "goes" "in" | "heading" "in" | "heads" "in" | "coming" "towards" "the" "camera"
           | "walking" "towards" "the" "camera"
           | "moving" "towards" "the" "camera" | "coming" "towards" | "walking" "towards" | "heading" "towards"
           | "moving" "towards" | "coming" "into" | "walking" "into" | "going" "into")   -> towards
         | ("leaving" | "leaves" | "leave" | "going" "out" | "goes" "out" | "walking" "out" | "walks" "out"
           | "exiting" | "exits" | "exit" | "departing" | "departs" | "walking" "away" | "walks" "away"
           | "going" "away" | "moving" "away" | "heading" "out" | "heading" "away" | "coming" "out" | "heads" "out"
           | "goes" "away" | "go" "away" | "go" "out" | "walk" "away" | "walk" "out" | "heads" "away"
           | "walking" "away" "from" "the" "camera" | "moving" "away" "from" "the" "camera")   -> away
         | ("moving" | "walking" | "going" | "heading" | "crossing") "to"? "the"? ("left" | "right")   -> sideways
         | (("walking" | "walks" | "walk" | "going" | "goes" | "go" | "driving" | "drives" | "drive" | "cycling"
           | "cycles" | "running" | "runs" | "passing" | "passes" | "pass" | "moving") ("past" | "by") | "passing"
           | "passers" "by" | "passer" "by")   -> passing
         | ("coming" | "comes" | "come" | "arriving" | "arrives" | "arrive" | "getting" | "gets") "home"  -> towards
         | ("leaving" | "leaves" | "leave") "home"                                      -> away
         | "not" direction                                                              -> not_direction

// --- what they wear: hi-vis, colours
wear: wear_word hivis_np                    -> hivis_yes
    | not_wear hivis_np                     -> hivis_no
    | wear_word colour_np                   -> colour_yes
    | not_wear colour_np                    -> colour_no
    | wear_word colour_np ("and" colour_np)+   -> colour_all_yes
    | not_wear colour_np ("and" colour_np)+    -> colour_all_no
    | wear_word colour_np ("or" colour_np)+    -> colour_any_yes
wear_word: "in" | "wearing" | "with" | "wears" | "wear" | "dressed" "in" | "who" "wears" | "who" "wear"
         | "is" "wearing" | "are" "wearing" | "has" "on" | "have" "on"
not_wear: "not" "wearing" | "is" "not" "wearing" | "are" "not" "wearing" | "does" "not" "wear"
        | "do" "not" "wear" | "without" | "with" "no" | "not" "in" | "is" "not" "in" | "are" "not" "in"
        | "not" "dressed" "in" | "who" "is" "not" "wearing" | "who" "are" "not" "wearing" | "with" "no"
        | "wearing" "no" | "has" "no" | "have" "no"
hivis_np: ("a" | "an" | "their" | "his" | "her" | "any" | "proper")? hivis_word garment?
hivis_word: "hivis" | "safety" | "reflective" | "fluorescent" | "neon" | "high" "visibility" | "visibility"
garment: "vest" | "vests" | "jacket" | "jackets" | "clothing" | "clothes" | "gear" | "top" | "tops" | "coat"
       | "coats" | "workwear" | "tabard" | "tabards" | "waistcoat" | "waistcoats" | "shirt" | "shirts" | "wear"
colour_np: ("a" | "an" | "our" | "their" | "his" | "her" | "the")? T_COLOUR uniform? upper_word   -> upper
         | ("a" | "an" | "our" | "their" | "his" | "her" | "the")? T_COLOUR uniform? lower_word   -> lower
uniform: "staff" | "uniform" | "work" | "company" | "school"
upper_word: "top" | "tops" | "shirt" | "shirts" | "tshirt" | "jacket" | "jackets" | "coat" | "coats" | "hoodie"
          | "hoodies" | "jumper" | "sweater" | "blouse" | "vest" | "fleece" | "hoody"
lower_word: "trousers" | "pants" | "jeans" | "skirt" | "shorts" | "leggings" | "bottoms" | "bottom" | "trouser"

// --- what they carry
carry: carry_word ("a" | "an" | "any" | "their" | "some" | "his" | "her")? objects    -> carry_yes
     | not_carry ("a" | "an" | "any" | "their" | "some")? objects                     -> carry_no
objects: T_OBJECT ((","? "or" | ",") ("a" | "an")? T_OBJECT)*
carry_word: "carrying" | "carries" | "carry" | "holding" | "holds" | "hold" | "with" | "has" | "have" | "having"
          | "who" "carries" | "who" "carry" | "who" "has" | "who" "have" | "pushing" | "wheeling"
not_carry: "not" "carrying" | "is" "not" "carrying" | "are" "not" "carrying" | "without" | "with" "no"
         | "does" "not" "carry" | "do" "not" "carry" | "not" "holding" | "has" "no" | "have" "no"
         | "who" "is" "not" "carrying" | "who" "are" "not" "carrying" | "does" "not" "have" | "do" "not" "have"

exception: ","? except_word body
except_word: "except" | "except" "for" | "except" "when" | "except" "if" | "unless" | "but" "not"
           | "other" "than" | "apart" "from" | "excluding" | "besides" | "save" "for" | "except" "where"

%declare T_NUM T_NUMWORD T_CLOCK T_ZONE T_WORD T_OTHER T_DAY T_COLOUR T_OBJECT
"""
