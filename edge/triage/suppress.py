"""The device's learned suppressions: the rules the cloud learned from benign verdicts at one place of a camera
(cloud.suppress), accepted by the operator and sent in the `suppressions` section of the remote configuration.

A track the rules would escalate, which one of them answers (shared.suppression: the same camera and label, in
its place AND like one of its looks, not expired), is answered here as `suppressed`: it does not leave the device.
A person who walks or stands where a suppression is does not look like what it learned, so is still escalated.
`matched` counts the tracks each rule answered, for the metrics and the decision log line.
"""

from __future__ import annotations

from typing import Protocol

from ...shared.suppression import SuppressionRule, SuppressionsSection, first_match


class SuppressibleTrack(Protocol):
    """What a suppression looks at in a track event (edge.vision.pipeline.TrackEvent has these)."""

    label: str
    crop_box: tuple[float, float, float, float] | None
    phash: str
    embedding: bytes | None


class Suppressions:
    """The live rules of one device and how often each answered a track."""

    def __init__(self, section: SuppressionsSection | None = None) -> None:
        self.rules: list[SuppressionRule] = []
        self.matched: dict[str, int] = {}
        self.replace(section or SuppressionsSection())

    def replace(self, section: SuppressionsSection) -> None:
        """Take a new set (a remote config applied); the counts of rules that stay are kept."""
        self.rules = list(section.rules)
        keep = {rule.id for rule in self.rules}
        self.matched = {rid: n for rid, n in self.matched.items() if rid in keep}

    def match(self, camera: str, track: SuppressibleTrack, now_ms: int) -> SuppressionRule | None:
        """The rule that answers this track, counted; None when none does (or the track has no crop place)."""
        if not self.rules or track.crop_box is None:
            return None
        rule = first_match(self.rules, camera=camera, label=track.label, box=track.crop_box, phash=track.phash,
                           embedding=track.embedding, now_ms=now_ms)
        if rule is not None:
            self.matched[rule.id] = self.matched.get(rule.id, 0) + 1
        return rule


__all__ = ["SuppressibleTrack", "Suppressions"]
