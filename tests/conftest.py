"""Real components for the tests: a Mosquitto of our own per test that needs one, unique topic prefixes,
Redis on 127.0.0.1:6379 (started for the session if none runs there), the real small LLM loaded once."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# the one "Mosquitto on a free port" helper, shared with the benchmarks (bench/brokers.py)
sys.path.append(str(Path(__file__).resolve().parents[1] / "bench"))
from brokers import CLOUD_USER, DEPLOY, Mosquitto, free_port  # noqa: E402

CLOUD = CLOUD_USER

__all__ = ["CLOUD", "CLOUD_USER", "DEPLOY", "MEDIA", "Mosquitto", "free_port"]

# The sample clips ship in the repository (models/media, CC BY 4.0, see its ATTRIBUTION.md).
MEDIA = Path(__file__).resolve().parents[1] / "models" / "media"


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


def clip_frame(clip: Path, second: float):
    """The frame (BGR) of a clip at `second`."""
    import cv2

    cap = cv2.VideoCapture(str(clip))
    try:
        cap.set(cv2.CAP_PROP_POS_MSEC, second * 1000)
        ok, image = cap.read()
    finally:
        cap.release()
    assert ok, f"cannot read {clip} at {second} s"
    return image


@pytest.fixture
def mosquitto(tmp_path_factory) -> Iterator[Mosquitto]:
    if shutil.which("mosquitto") is None:
        pytest.fail("mosquitto is not installed (apt-get install mosquitto)")
    broker = Mosquitto(free_port(), tmp_path_factory.mktemp("mosquitto"), persistence=True)
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def secure(tmp_path) -> Iterator[Mosquitto]:
    """The shipped broker config (deploy/mosquitto: TLS, client certificates, ACL) on free ports, with
    certificates for cam-a and cam-b (and the cloud) and a password user cam-c."""
    broker = Mosquitto.shipped(
        tmp_path / "broker", ("cam-a", "cam-b"), passwords={"cam-c": None, "edgetriage.homeassistant": None}
    ).start()
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
def visitor_crop(clip_one_by_one):
    """The pixels (BGR) of the spot where the first visitor stands, 12 s into the one-by-one clip."""
    import cv2

    cap = cv2.VideoCapture(str(clip_one_by_one))
    cap.set(cv2.CAP_PROP_POS_MSEC, 12_000)
    ok, frame = cap.read()
    cap.release()
    assert ok
    return frame[0:400, 370:560]


@pytest.fixture(scope="session")
def visitor_jpeg(visitor_crop) -> bytes:
    """That crop as a JPEG (OpenCV's default quality)."""
    import cv2

    return cv2.imencode(".jpg", visitor_crop)[1].tobytes()


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


REDIS_PORT = 6379  # where the Redis tests look (tests/test_faults.py, tests/test_security.py)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="session", autouse=True)
def redis_for_the_session(tmp_path_factory) -> Iterator[None]:
    """Redis on 127.0.0.1:6379 for the tests that use it: the one already running there (never stopped or
    changed), else one of this session's own, in memory, stopped at the end. Without redis-server installed
    nothing starts and the Redis tests say they cannot connect."""
    if _listening(REDIS_PORT) or shutil.which("redis-server") is None:
        yield
        return
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(REDIS_PORT), "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=open(workdir / "redis.log", "ab"))
    deadline = time.monotonic() + 10
    while not _listening(REDIS_PORT) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def detector():
    """The default detector (YOLOX-Nano), loaded once: detectors keep no state between calls. A module that
    needs another one defines its own `detector`."""
    from edgetriage.edge.vision.detect import DetectorConfig, build_detector

    return build_detector(DetectorConfig())


@pytest.fixture(scope="session")
def stages():
    """The default cascade stages beside the detector (classifier and friends), loaded once."""
    from edgetriage.edge.vision.closer import build_stages
    from edgetriage.edge.vision.events import VisionConfig

    return build_stages(VisionConfig())
