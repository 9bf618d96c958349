"""Policy sentences parsed once per machine, not once per test process (tests only). Earley parsing takes
0.2-2 s a sentence, and bench/mutation.py runs a policy test file once per mutant of policy_words.py or
gate.py, modules the parse never enters: each run would parse the same sentences again to the same result.

`remembered()` (the body of a module-scoped fixture) makes policy_tree's reading of a sentence (`_read_once`,
the parse and its reading, before policy_words assembles the clauses) and the grammar's keywords come from a
file in the system's temp folder, keyed by lark's version and the text of every module the parse runs
(policy.py included, so a mutant of the evaluator parses afresh): a change to any of them is a new file, and a
sentence it does not hold is parsed as usual and added. What is asserted of a policy is computed as without it."""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterator
from pathlib import Path

import lark
import pytest
from edgetriage.cloud.analysis import policy_tree, policy_words

# the modules a sentence's parse and reading run (policy_tree._read_once): not policy_words.py nor gate.py
PARSE = ("cloud/analysis/policy_tree.py", "cloud/analysis/policy_grammar.py", "cloud/analysis/policy_lexicon.py",
         "cloud/analysis/policy_reading.py", "cloud/analysis/policy_body.py", "cloud/analysis/policy_check.py",
         "cloud/analysis/policy.py", "shared/policycell.py")


def _file() -> Path:
    root = Path(policy_tree.__file__).resolve().parents[2]
    digest = hashlib.sha256(lark.__version__.encode())
    for name in PARSE:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes())
    return Path(tempfile.gettempdir()) / f"edgetriage-policy-reads-{digest.hexdigest()[:20]}.pickle"


class _Reads:
    def __init__(self) -> None:
        self.path = _file()
        self.parse = policy_tree._read_once.__wrapped__  # the reading itself, without its in-process cache
        try:
            self.kept: dict = pickle.loads(self.path.read_bytes())
        except (OSError, EOFError, pickle.UnpicklingError):
            self.kept = {}
        self.new = False

    def read_once(self, sentence: str, zones: tuple[str, ...], camera: str | None) -> tuple[str, object]:
        key = ("read", sentence, zones, camera)
        if key not in self.kept:
            self.kept[key] = self.parse(sentence, zones, camera)
            self.new = True
        return self.kept[key]

    def keywords(self) -> dict[str, str]:
        if "keywords" not in self.kept:
            self.kept["keywords"] = policy_tree.keywords()
            self.new = True
        return self.kept["keywords"]

    def save(self) -> None:
        if not self.new:
            return
        try:  # another process may have added its own since this one read the file
            self.kept = {**pickle.loads(self.path.read_bytes()), **self.kept}
        except (OSError, EOFError, pickle.UnpicklingError):
            pass
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name)
        with os.fdopen(fd, "wb") as out:
            pickle.dump(self.kept, out)
        os.replace(tmp, self.path)


def remembered() -> Iterator[None]:
    """A module-scoped fixture's body: the policy reader reads from the kept file and adds to it."""
    reads = _Reads()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(policy_tree, "_read_once", reads.read_once)
        patch.setattr(policy_words, "keywords", reads.keywords)
        yield
    reads.save()
