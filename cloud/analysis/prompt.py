"""Prompt templates, one file per label, and the values that fill them: shared by every back-end so that
the same event reads the same to any model, and a template's version can go into the reuse rule.

Every model gets the translator's facts (what the cloud's own closer look found) and the operator's policy
for the camera and zone, as short sentences after the fixed start of the prompt; vision models get the image
as well, with `<label>.vision.txt` templates written for them. The policy is folded into the version.
"""

from __future__ import annotations

import base64
import hashlib
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from ...shared.config import ConfigError
from ...shared.protocol import Event
from ..config import PolicyConfig
from .answer import ANSWER, DESCRIPTION_MAX
from .translator import Facts

PLACEHOLDERS = ("label", "score", "camera", "time_utc", "detections", "uncertain", "seen", "seen_source", "reason",
                "facts", "policy")
MAX_PROMPT_DETECTIONS = 5
VISION_SUFFIX = ".vision"




@dataclass(frozen=True)
class PromptTemplate:
    """One prompt file: a `# version: ...` line, a [system] section, optionally example turns
    ([user] then [assistant], as often as wanted: a model this small copies examples far better than it
    follows instructions), and a final [user] section. Sections use $placeholders (see PLACEHOLDERS)."""

    version: str
    turns: tuple[tuple[str, string.Template], ...]  # (role, content), system first, user last
    source: str

    @classmethod
    def parse(cls, text: str, source: str) -> PromptTemplate:
        version = None
        sections: list[tuple[str, list[str]]] = []
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if not sections and (not stripped or stripped.startswith("#")):
                match = re.match(r"#\s*version:\s*(\S+)\s*$", stripped)
                if match:
                    version = match.group(1)
                continue
            if stripped in ("[system]", "[user]", "[assistant]"):
                sections.append((stripped[1:-1], []))
                continue
            if not sections:
                raise ConfigError(f"{source}:{number}: text before the [system] section; start it with [system]")
            sections[-1][1].append(line)
        if version is None or not re.fullmatch(r"[A-Za-z0-9._-]{1,32}", version):
            raise ConfigError(f"{source}: needs a first line like '# version: person-1' "
                              "(letters, digits, '.', '_', '-'; at most 32)")
        roles = [role for role, _ in sections]
        expected = ["system"] + ["user", "assistant"] * ((len(roles) - 2) // 2) + ["user"]
        if roles != expected:
            raise ConfigError(f"{source}: sections must be [system], then optional [user]/[assistant] example "
                              f"pairs, then [user]; found {', '.join(f'[{r}]' for r in roles) or 'none'}")
        turns = []
        for role, lines in sections:
            content = "\n".join(lines).strip()
            if not content:
                raise ConfigError(f"{source}: a [{role}] section is empty")
            if role == "assistant":
                answer = content.removeprefix(ANSWER.prefix)
                if not content.startswith(ANSWER.prefix) or ANSWER.walk(ANSWER.start, answer) != ANSWER.end:
                    raise ConfigError(f"{source}: an [assistant] example must be one answer in the exact form "
                                      f"{ANSWER.example} (keys in that order, confidence 0..1 with at most two "
                                      f"decimals, description 1..{DESCRIPTION_MAX} characters)")
            turns.append((role, string.Template(content)))
        template = cls(version, tuple(turns), source)
        try:
            template.render(dict.fromkeys(PLACEHOLDERS, "x"))
        except KeyError as exc:
            raise ConfigError(f"{source}: unknown placeholder ${exc.args[0]}; known: "
                              + ", ".join(f"${p}" for p in PLACEHOLDERS)) from None
        except ValueError as exc:
            raise ConfigError(f"{source}: bad placeholder ({exc}); write $$ for a literal $") from None
        return template

    def render(self, values: dict[str, str]) -> list[dict[str, str]]:
        return [{"role": role, "content": content.substitute(values)} for role, content in self.turns]


def template_key(label: str) -> str:
    """The file stem a label's template lives under: 'Person' -> 'person', 'fire hydrant' -> 'fire_hydrant'."""
    return re.sub(r"[^a-z0-9_-]+", "_", label.lower()).strip("_") or "default"


class PromptBook:
    """All templates of one folder, read once at start-up so a broken file stops the service there, not
    per event. `<label>.txt` answers that label; `default.txt` (required) answers the rest."""

    def __init__(self, directory: str | Path | None = None):
        if directory is None:
            root = resources.files("edgetriage.cloud") / "prompts"
            files = {Path(entry.name).stem: (entry.read_text(encoding="utf-8"), f"prompts/{entry.name}")
                     for entry in root.iterdir() if entry.name.endswith(".txt")}
        else:
            folder = Path(directory).expanduser()
            if not folder.is_dir():
                raise ConfigError(f"analyzer.prompts_dir {folder} is not a folder; create it with default.txt "
                                  "(copy edgetriage/cloud/prompts/) or remove the key")
            files = {path.stem: (path.read_text(encoding="utf-8"), str(path)) for path in folder.glob("*.txt")}
        self.templates = {stem: PromptTemplate.parse(text, source) for stem, (text, source) in files.items()}
        if "default" not in self.templates:
            raise ConfigError(f"{directory or 'prompts'}: default.txt is missing; every label needs a fallback")

    def for_label(self, label: str, vision: bool = False) -> PromptTemplate:
        """The label's template, else default.txt; for a vision model `<label>.vision.txt`, then
        `default.vision.txt`, are preferred."""
        key = template_key(label)
        if vision:
            found = self.templates.get(key + VISION_SUFFIX) or self.templates.get("default" + VISION_SUFFIX)
            if found is not None:
                return found
        return self.templates.get(key) or self.templates["default"]


# --- prompt content -----------------------------------------------------------------------------------------


def _detections_text(event: Event) -> str:
    parts = []
    for det in event.detections[:MAX_PROMPT_DETECTIONS]:
        x1, y1, x2, y2 = det.box
        area = max(0.0, x2 - x1) * max(0.0, y2 - y1)
        parts.append(f"{det.label} score {det.score:.2f} at x {x1:.2f}-{x2:.2f}, y {y1:.2f}-{y2:.2f} "
                     f"({area:.0%} of the frame)")
    if len(event.detections) > MAX_PROMPT_DETECTIONS:
        parts.append(f"and {len(event.detections) - MAX_PROMPT_DETECTIONS} more")
    return "; ".join(parts) or f"{event.label} score {event.score:.2f}"


def _seen_text(seen: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{label} {score:.0%}" for label, score in seen) or "nothing recognisable"


def prompt_values(event: Event, seen: Sequence[tuple[str, float]], seen_source: str, facts: Facts | None = None,
                  policy: str | None = None) -> dict[str, str]:
    """The placeholder values for one event. `$facts` are the translator's sentences, the one that answers
    the question (is the label there?) last, right before the answer; `$policy` is the operator's sentence
    for this camera and zone as "Policy: ... " (empty without one), meant to go before the facts."""
    when = datetime.fromtimestamp(event.captured_ms / 1000, UTC).strftime("%H:%M")
    reason = event.reason.strip()
    uncertain = f"yes ({reason})" if event.uncertain and reason else ("yes" if event.uncertain else "no")
    return {"label": event.label, "score": f"{event.score:.2f}", "camera": event.camera, "time_utc": when,
            "detections": _detections_text(event), "uncertain": uncertain, "seen": _seen_text(seen),
            "seen_source": seen_source, "reason": reason or "none given",
            "facts": " ".join(facts.sentences()) if facts is not None else "No closer look was possible.",
            "policy": f"Policy: {policy.strip().rstrip('.')}. " if policy else ""}


def policy_for(policies: Sequence[PolicyConfig], camera: str, zones: Sequence[str]) -> str | None:
    """The operator's sentence for an event: the most specific entry that matches (camera and zone, then
    camera, then zone, then one for everywhere); None without one."""
    best, rank = None, -1
    for entry in policies:
        if entry.camera is not None and entry.camera != camera:
            continue
        if entry.zone is not None and entry.zone not in zones:
            continue
        score = (2 if entry.camera is not None else 0) + (1 if entry.zone is not None else 0)
        if score > rank:
            best, rank = entry.said, score
    return best


def versioned(version: str, policy: str | None) -> str:
    """A template's version with the policy folded in, so no verdict is reused across policies (<= 32
    characters, as the reuse rule allows)."""
    if not policy:
        return version
    return f"{version[:23]}+{hashlib.sha256(policy.encode()).hexdigest()[:8]}"


# --- a prompt, ready for any back-end -----------------------------------------------------------------------


class Translating(Protocol):
    def translate(self, event: Event) -> Facts: ...


@dataclass(frozen=True)
class Prompt:
    """One event's prompt: chat messages (plain text content), the facts and policy they were made from (the
    check holds the answer against them) and, for a vision model, the crop to attach to the last user turn."""

    messages: list[dict[str, str]]
    version: str
    source: str
    image: bytes | None = None
    seen: tuple[tuple[str, float], ...] = ()
    seen_source: str = ""
    facts: Facts | None = None
    policy: str | None = None
    anchor: list[dict[str, str]] | None = None  # the same messages with the facts' answer left out

    def extra(self) -> dict[str, Any]:
        """What the prompt was made of, for the verdict's record."""
        out: dict[str, Any] = {"seen": [[label, round(score, 3)] for label, score in self.seen],
                               "seen_source": self.seen_source, "prompt_file": self.source}
        if self.facts is not None:
            out["facts"] = self.facts.sentences()
            out["person_score"] = self.facts.label_score
            out["picture"] = list(self.facts.picture)
            if self.facts.view is not None:
                out["view"] = self.facts.view
        if self.policy:
            out["policy"] = self.policy
        return out


class PromptBuilder:
    """Event -> Prompt for one kind of model (text-only or vision), the same for every back-end: the
    translator's facts and the operator's policy go to both; a vision model gets the crop as well."""

    def __init__(self, book: PromptBook, translator: Translating | None, vision: bool = False,
                 policies: Sequence[PolicyConfig] = ()):
        self.book = book
        self.translator = translator
        self.vision = vision
        self.policies = list(policies)

    def version(self, event: Event) -> str:
        """The prompt version an event will be answered under (cheap: no translation)."""
        policy = policy_for(self.policies, event.camera, event.zones)
        return versioned(self.book.for_label(event.label, self.vision).version, policy)

    def build(self, event: Event) -> Prompt:
        """Blocking (the translator runs the detector on the crop): call it off the event loop."""
        template = self.book.for_label(event.label, self.vision)
        facts = self.translator.translate(event) if self.translator is not None else None
        if event.classes:
            seen: Sequence[tuple[str, float]] = [(c.label, c.score) for c in event.classes[:3]]
            source = "on the device"
        elif facts is not None and facts.hint:
            seen, source = [(facts.hint, 1.0)], "ImageNet"
        else:
            seen, source = [], "the image" if self.vision else "ImageNet"
        policy = policy_for(self.policies, event.camera, event.zones)
        values = prompt_values(event, seen, source, facts, policy)
        messages = template.render(values)
        anchor = None
        if facts is not None and not self.vision:
            anchor = template.render(values | {"facts": " ".join(facts.sentences(anchor=True))})
        return Prompt(messages, versioned(template.version, policy), template.source,
                      event.crop if self.vision else None, tuple(seen), source, facts, policy, anchor)


def data_url(jpeg: bytes) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def chat_messages(prompt: Prompt) -> list[dict[str, Any]]:
    """The prompt as OpenAI chat messages: for a vision model the last user turn carries the crop as an
    image data URL after its text."""
    messages: list[dict[str, Any]] = [dict(m) for m in prompt.messages]
    if prompt.image is not None:
        last = messages[-1]
        last["content"] = [{"type": "text", "text": last["content"]},
                           {"type": "image_url", "image_url": {"url": data_url(prompt.image)}}]
    return messages
