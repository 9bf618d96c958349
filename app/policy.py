"""`edgetriage cloud policy explain "WORDS"`: what a policy in words compiles into, before it decides anything:
the structured form that runs (the same check-config shows for the config's words), what was not compiled and
what the evaluator does with it, and a table of the situations that decide it with the verdict each gets.
`--write` puts the structured form into the config as the camera's `[[analyzer.policies]]` entry (replacing
an entry with these words), the words kept as a comment, so what runs is what the operator saw."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import Any


def add_parser(csub: Any) -> None:
    policy = csub.add_parser("policy", help="what a policy in words compiles into", description=__doc__,
                             epilog='example:\n  edgetriage cloud policy explain "Alert on anyone at the gate after '
                                    '9pm" --zone gate',
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    psub = policy.add_subparsers(dest="policy_command", required=True, metavar="COMMAND")
    cmd = psub.add_parser(
        "explain", help="print the form a policy compiles into and the situations that decide it",
        description="Compiles WORDS as the cloud does when its config loads and prints the form that runs, "
                    "the words each rule used, what is not compiled (it goes to the model), and the deciding "
                    "situations (each time edge, threshold, zone and look, just inside and outside) with the "
                    "verdict each gets. Refused words: one line, exit 2.",
        epilog='example:\n  edgetriage cloud policy explain "Alert on anyone at the gate after 9pm" '
               "--camera gate --zone gate",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("words", help="the policy in words")
    cmd.add_argument("--camera", help="the camera it is for (its zones in --config are read as zones)")
    cmd.add_argument("--zone", action="append", default=[], metavar="NAME",
                     help="a zone name configured on the camera (repeatable; --config's are added)")
    cmd.add_argument("--config", metavar="FILE", help="the cloud config: its policies' zones for the camera")
    cmd.add_argument("--write", action="store_true",
                     help="write the structured form into --config (the words kept as a comment)")
    cmd.set_defaults(func=cmd_policy_explain)


def cmd_policy_explain(args: argparse.Namespace) -> int:
    from .cloud.analysis.policy_check import PolicyRefused
    from .cloud.analysis.policy_form import explain, to_toml
    from .cloud.analysis.policy_words import compile_policy
    from .cloud.config import load_cloud_config
    from .shared.config import ConfigError

    zones = list(args.zone)
    if args.write and not args.config:
        raise ConfigError("policy explain --write: say which config to write (--config FILE)")
    if args.config:
        config = load_cloud_config(args.config)
        zones += [e.zone for e in config.analyzer.policies if e.zone and e.camera in (None, args.camera)]
    try:
        policy = compile_policy(args.words, tuple(zones), args.camera)
    except PolicyRefused as exc:
        raise ConfigError(f"policy refused: {exc}") from None
    print(f"words: {args.words}")
    print(f"compiled: {policy.plain()}")
    for line in explain(policy):
        print(line)
    if args.write:
        same = [e for e in config.analyzer.policies if e.text == args.words and e.camera == args.camera]
        try:
            entry = to_toml(policy, args.camera, same[0].zone if same else None)
        except PolicyRefused as exc:
            raise ConfigError(f"policy explain --write: {exc}") from None
        written = _write(Path(args.config), args.words, args.camera, entry)
        load_cloud_config(written)  # what was written loads, or the file is put back (below)
        print(f"written to {args.config}")
    return 0


def _write(path: Path, words: str, camera: str | None, entry: str) -> Path:
    """The config with `entry` in place of the entry with these words for this camera (or added at the end);
    the file is put back as it was if the result does not load."""
    from .cloud.config import load_cloud_config
    from .shared.config import ConfigError

    old = path.read_text(encoding="utf-8")
    entries = tomllib.loads(old).get("analyzer", {}).get("policies", [])
    index = next((i for i, e in enumerate(entries) if e.get("text") == words and e.get("camera") == camera), None)
    lines = old.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == "[[analyzer.policies]]"]
    if index is not None and index < len(starts):
        start = starts[index]
        end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")
                    and not lines[i].strip().startswith("[[analyzer.policies.rules]]")), len(lines))
        new = "".join(lines[:start]) + entry + ("\n" if end < len(lines) else "") + "".join(lines[end:])
    else:
        new = old + ("" if old.endswith("\n") or not old else "\n") + "\n" + entry
    path.write_text(new, encoding="utf-8")
    try:
        load_cloud_config(path)
    except ConfigError:
        path.write_text(old, encoding="utf-8")
        raise
    return path


__all__ = ["add_parser"]
