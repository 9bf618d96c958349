"""Remake docs/demo-page.png, the live page the README shows: `python docs/make_screenshot.py [OUT.png]`.

Runs `edgetriage demo --serve` (embedded broker, bundled clip, the real detector and LLM), opens its page in
headless Chromium the way tests/test_page.py does, waits until every event has its verdict, saves the
screenshot and stops the demo with Ctrl-C. Needs what the tests need: `pip install '.[test]'` and Chromium.
The tests never write here; this script is the only thing that does.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_page import Lines, _drive_page, chromium_path  # noqa: E402 - the page driver the tests use


def main(argv: list[str]) -> int:
    out_png = Path(argv[0]) if argv else ROOT / "docs" / "demo-page.png"
    try:
        chromium_path()
    except BaseException as exc:  # pytest's Failed: say it in one line, before a demo runs for nothing
        print(f"make_screenshot: {exc}", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "edgetriage", "demo", "--serve", "--no-ha"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = Lines(proc.stdout), Lines(proc.stderr)
        link = err.wait_for("live page (one-time link): ", 600).split(": ", 1)[1].split()[0]
        page = asyncio.run(_drive_page(link, out, out_png))
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(f"{out_png}: {page['cards']} events, α {page['alpha']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
