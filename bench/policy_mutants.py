"""Hand-planted one-line bugs in issue 36's compiler, evaluator and gate (the kinds the issue lists: a window's
first and last minute, a wrapping window's end, at least against more than, the day a night belongs to, a
negation dropped, an exception's verdict, a refusal swallowed, the otherwise; then one per class of phrasing),
each run against tests/test_policy_words.py and tests/test_policy_phrasing.py in place and put back: a quick
stand-in for bench/mutation.py on these modules.

    nice -n 10 python bench/policy_mutants.py
"""

import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
MUTANTS = [  # (module, the line as it is, the bug)
    ('cloud/analysis/policy.py',
     'return start <= minute < end if start <= end',
     'return start < minute < end if start <= end'),
    ('cloud/analysis/policy.py',
     'minute >= start or minute < end',
     'minute > start or minute < end'),
    ('cloud/analysis/policy.py',
     '">=": value >= n',
     '">=": value > n'),
    ('cloud/analysis/policy.py',
     'day = (weekday - 1) % 7 if',
     'day = weekday if'),
    ('cloud/analysis/policy.py',
     'return value if value is None or not cond.negated else not value',
     'return value'),
    ('cloud/analysis/policy_reading.py',
     'return (minute, 6 * 60)',
     'return (minute, 0)'),
    ('cloud/analysis/policy_grammar.py',
     '("at" "least" | "no" "less" "than" | "no" "fewer" "than") -> ge',
     '("at" "least" | "no" "less" "than" | "no" "fewer" "than") -> gt'),
    ('cloud/analysis/policy_words.py',
     'add(other[sent.verdict], main + sent.exc)',
     'add(sent.verdict, main + sent.exc)'),
    ('cloud/analysis/policy_words.py',
     'build.clauses.append(Clause("model", (Cond("words", sentence),)',
     'build.clauses.append(Clause("benign", (Cond("words", sentence),)'),
    ('cloud/analysis/gate.py',
     'except PolicyRefused as exc:\n                raise ConfigError',
     'except KeyError as exc:\n                raise ConfigError'),
    ('cloud/analysis/policy_check.py',
     'if ga == gb or gb == -1 or a.verdict == b.verdict',
     'if True or ga == gb or gb == -1 or a.verdict == b.verdict'),
    ('cloud/analysis/policy_words.py',
     'otherwise = said.pop() if said else "model"',
     'otherwise = said.pop() if said else "alert"'),
    # issue 36, second session: the classes of phrasing (tests/test_policy_phrasing.py)
    ('cloud/analysis/policy_reading.py',
     'options.sort()',
     'options.sort(reverse=True)'),
    ('cloud/analysis/policy_words.py',
     'return tuple(c for c in build.clauses[-1].conds if not _when(c))',
     'return ()'),
    ('cloud/analysis/policy_words.py',
     'conds.append(Cond(build.last_when.kind, build.last_when.value, bool(p.value)))',
     'conds.append(Cond(build.last_when.kind, build.last_when.value, False))'),
    ('cloud/analysis/policy_words.py',
     'not everywhere\n        add(sent.verdict, main)\n        add(other[sent.verdict], sent.pre)',
     'not everywhere\n        add(sent.verdict, main)\n'
     '        build.otherwise.append((other[sent.verdict], sentence))'),
    ('cloud/analysis/policy_tree.py',
     'return Sent("copular", "benign", (subj, *body), (), exc)',
     'return Sent("copular", "alert", (subj, *body), (), exc)'),
    ('cloud/analysis/policy_reading.py',
     'Cond("any", (Cond("direction", "left"), Cond("direction", "right")))',
     'Cond("direction", "left")'),
    ('cloud/analysis/policy_lexicon.py',
     'return len(key), owners if len(owners) > 1 else owners[0]',
     'return len(key), owners[0]'),
    ('cloud/analysis/policy_body.py',
     'if len(named) > 1:',
     'if len(named) > 2:'),
    ('cloud/analysis/policy_words.py',
     'conds.append(Cond("dwell", (p.value, said[-1].value[1])))',
     'conds.append(Cond("dwell", (">", said[-1].value[1])))'),
    ('cloud/analysis/policy_lexicon.py',
     'w in _DETS or w in roles or not (',
     'True or w in _DETS or w in roles or not ('),
    ('cloud/analysis/policy_reading.py',
     'if part.kind == "cond" and not any(',
     'if False and not any('),
    ('cloud/analysis/policy_reading.py',
     'if wraps[0].value != NIGHT:',
     'if False:'),
]
TESTS = ["tests/test_policy_words.py", "tests/test_policy_phrasing.py"]
killed = 0
for path, old, new in MUTANTS:
    f = root / path
    src = f.read_text()
    assert src.count(old) == 1, (path, old)
    f.write_text(src.replace(old, new))
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                            *TESTS], cwd=root, capture_output=True, text=True, timeout=600)
        dead = r.returncode != 0
    except subprocess.TimeoutExpired:
        dead = True
    finally:
        f.write_text(src)
    killed += dead
    print(("KILLED  " if dead else "SURVIVED"), path, "|", new.replace("\n", " ")[:70], flush=True)
print(f"{killed} of {len(MUTANTS)} killed")
