"""Prompt templates, one file per label, and the values that fill them: shared by every back-end so that
the same event reads the same to any model, and a template's version can go into the reuse rule.

Text-only models read the crop as words (the device's classes, or the top ImageNet classes of the crop);
vision models get the image itself, with `<label>.vision.txt` templates written for them.
"""

from __future__ import annotations

import base64
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
from .answer import ANSWER, DESCRIPTION_MAX

PLACEHOLDERS = ("label", "score", "camera", "time_utc", "detections", "uncertain", "seen", "seen_source", "reason")
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


def prompt_values(event: Event, seen: Sequence[tuple[str, float]], seen_source: str) -> dict[str, str]:
    """The placeholder values for one event."""
    when = datetime.fromtimestamp(event.captured_ms / 1000, UTC).strftime("%H:%M")
    reason = event.reason.strip()
    uncertain = f"yes ({reason})" if event.uncertain and reason else ("yes" if event.uncertain else "no")
    return {"label": event.label, "score": f"{event.score:.2f}", "camera": event.camera, "time_utc": when,
            "detections": _detections_text(event), "uncertain": uncertain, "seen": _seen_text(seen),
            "seen_source": seen_source, "reason": reason or "none given"}




# --- a prompt, ready for any back-end -----------------------------------------------------------------------


class Describer(Protocol):
    top_k: int

    def describe(self, jpeg: bytes) -> list[tuple[str, float]]: ...


@dataclass(frozen=True)
class Prompt:
    """One event's prompt: chat messages (plain text content) and, for a vision model, the crop to attach to
    the last user turn."""

    messages: list[dict[str, str]]
    version: str
    source: str
    image: bytes | None = None
    seen: tuple[tuple[str, float], ...] = ()
    seen_source: str = ""

    def extra(self) -> dict[str, Any]:
        """What the prompt was made of, for the verdict's record."""
        return {"seen": [[label, round(score, 3)] for label, score in self.seen], "seen_source": self.seen_source,
                "prompt_file": self.source}


class PromptBuilder:
    """Event -> Prompt for one kind of model (text-only or vision), the same for every back-end."""

    def __init__(self, book: PromptBook, describer: Describer | None, vision: bool = False):
        if not vision and describer is None:
            raise ValueError("a text-only model needs a crop describer")
        self.book = book
        self.describer = describer
        self.vision = vision

    def version(self, label: str) -> str:
        return self.book.for_label(label, self.vision).version

    def build(self, event: Event) -> Prompt:
        template = self.book.for_label(event.label, self.vision)
        if self.vision:
            seen: Sequence[tuple[str, float]] = [(c.label, c.score) for c in event.classes]
            source = "on the device" if seen else "the image"
        elif event.classes:
            assert self.describer is not None
            seen = [(c.label, c.score) for c in event.classes[: self.describer.top_k]]
            source = "on the device"
        else:
            assert self.describer is not None
            seen = self.describer.describe(event.crop)
            source = "ImageNet"
        messages = template.render(prompt_values(event, seen, source))
        return Prompt(messages, template.version, template.source, event.crop if self.vision else None,
                      tuple(seen), source)


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
