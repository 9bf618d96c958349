"""Real components for the tests: a Mosquitto of our own per test that needs one, unique topic prefixes,
the real small LLM loaded once per session."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The sample clips ship in the repository (models/media, CC BY 4.0, see its ATTRIBUTION.md).
MEDIA = Path(__file__).resolve().parents[1] / "models" / "media"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clip_crop(clip: Path, frame: int, box: tuple[int, int, int, int]) -> bytes:
    """One region (x1, y1, x2, y2 in pixels) of one frame of a clip, as the JPEG a device would send."""
    import cv2

    cap = cv2.VideoCapture(str(clip))
    try:
        cap.set(cv2.CAP_PROP_POS_FRAMES, frame)
        ok, image = cap.read()
    finally:
        cap.release()
    assert ok, f"cannot read frame {frame} of {clip}"
    x1, y1, x2, y2 = box
    return cv2.imencode(".jpg", image[y1:y2, x1:x2], [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()


@dataclass
class Mosquitto:
    """A broker of the test's own on a free loopback port; can be killed and restarted on the same port."""

    port: int
    workdir: Path
    persistence: bool = False
    proc: subprocess.Popen | None = None
    config_text: str | None = None  # a whole config of the test's own (e.g. the shipped one, rewritten)

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def start(self) -> None:
        conf = self.workdir / "mosquitto.conf"
        lines = [f"listener {self.port} 127.0.0.1", "allow_anonymous true", "max_queued_messages 10000", "set_tcp_nodelay true",
                 "log_dest stderr", "log_type error", "log_type warning"]
        if self.persistence:
            lines += ["persistence true", f"persistence_location {self.workdir}/", "autosave_interval 1",
                      "autosave_on_changes true"]
        conf.write_text(self.config_text if self.config_text is not None else "\n".join(lines) + "\n")
        self.proc = subprocess.Popen(["mosquitto", "-c", str(conf)], stdout=subprocess.DEVNULL,
                                     stderr=open(self.workdir / "mosquitto.log", "ab"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"mosquitto exited: {(self.workdir / 'mosquitto.log').read_text()}") from None
                time.sleep(0.05)
        raise RuntimeError("mosquitto did not start listening")

    def stop(self, sig: str = "term") -> None:
        if self.proc is None:
            return
        if sig == "kill":
            self.proc.kill()
        else:
            self.proc.terminate()
        self.proc.wait(10)
        self.proc = None


@pytest.fixture
def mosquitto(tmp_path_factory) -> Iterator[Mosquitto]:
    if shutil.which("mosquitto") is None:
        pytest.fail("mosquitto is not installed (apt-get install mosquitto)")
    broker = Mosquitto(free_port(), tmp_path_factory.mktemp("mosquitto"), persistence=True)
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def clip_one_by_one() -> Path:
    path = MEDIA / "one-by-one-person-detection.mp4"
    if not path.exists():
        from edgetriage.shared.modelfiles import bundled_clip

        path = bundled_clip()
    return path


@pytest.fixture(scope="session")
def llm_analyzer():
    """The real CPU back-end (SmolLM2-135M via transformers, on a thread of its own), loaded once for the
    whole session; its blocking engine is `.engine`."""
    from edgetriage.cloud.analysis import build_backend
    from edgetriage.cloud.config import AnalyzerConfig

    return build_backend(AnalyzerConfig())


@pytest.fixture
def tmpdir_path() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)
