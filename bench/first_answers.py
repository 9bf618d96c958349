"""First answers when several policy events arrive at once (issue 41): two and six faint shapes staying 60 s at a
door whose policy alerts for a stay over 30 s, sent together; model stand-ins answer after 3 s; `first_answer_ms`
the default with several back-ends (800). Per event: when its first answer came, and when one with the policy's
leaning (alert, if someone is there) came, ms after arrival. One JSON line last.

    python bench/first_answers.py [--tests DIR]     # DIR: the tests folder whose helpers it replays (tests/)
"""
import argparse
import asyncio
import json
import pathlib
import sys
import tempfile

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--tests", default=str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
args = parser.parse_args()
sys.path.insert(0, args.tests)
import conftest  # noqa: E402
from edgetriage.cloud.analysis import build_backend  # noqa: E402
from edgetriage.cloud.compose import build_service  # noqa: E402
from edgetriage.cloud.config import CloudConfig  # noqa: E402
from edgetriage.cloud.storage.store import SQLiteStore  # noqa: E402
from edgetriage.shared.topics import Topics  # noqa: E402
from test_routing import BOX, ChatServer, _blurred, _event  # noqa: E402

clip = conftest.MEDIA / "one-by-one-person-detection.mp4"
faint = _blurred(conftest.clip_crop(clip, 120, BOX), 10.0)
heard = []

async def scenario(tmp, n):
    small = await ChatServer("benign", 3.0, 8).start()
    large = await ChatServer("benign", 3.0, 8).start()
    config = CloudConfig.model_validate({
        "store_path": str(tmp / "c.db"), "reuse": {"verify_sample": 0.0},
        "analyzer": {"t_max_ms": 5000, "backends": [
            {"name": "small", "kind": "openai", "cost": "small", "openai": {"base_urls": [small.url]}},
            {"name": "large", "kind": "openai", "cost": "large", "latency_ms": 3000,
             "openai": {"base_urls": [large.url], "max_in_flight": 8}}],
            "policies": [{"camera": "front", "text": "Alert only if someone stays at the door longer than 30 s"}]}})
    store = SQLiteStore(config.store_path)
    backend = build_backend(config.analyzer)
    service = build_service(config, backend, store, on_verdict=heard.append)
    topic = Topics(config.mqtt.prefix).events("pi-routes")

    def event(i):
        return _event(faint, i).model_copy(update={"camera": "front", "zones": ["door"], "dwell_s": 60.0,
                                                   "local_time": "12:00"})
    try:
        await service.process(event(400), topic)
        events = [event(410 + i) for i in range(n)]
        await asyncio.gather(*(service.process(e, topic) for e in events))
        out = []
        for e in events:
            said = [v for v in heard if v.event_id == e.event_id and v.source == "fallback"]
            lean = [v for v in said if v.verdict != "unknown"]
            out.append((round(said[0].timings.total_ms) if said else None,
                        round(lean[0].timings.total_ms) if lean else None))
        return out
    finally:
        await service.stop()
        await backend.close()
        store.close()
        await small.stop()
        await large.stop()

result = {}
with tempfile.TemporaryDirectory() as d:
    for n in (2, 6):
        heard.clear()
        (pathlib.Path(d) / str(n)).mkdir()
        got = asyncio.run(scenario(pathlib.Path(d) / str(n), n))
        first = sorted(x[0] for x in got if x[0] is not None)
        result[f"first_answer_ms_{n}_at_once"] = first
        result[f"first_answer_max_ms_{n}_at_once"] = max(first) if first else None
        result[f"policy_leaning_ms_{n}_at_once"] = sorted(x[1] for x in got if x[1] is not None)
print(json.dumps(result))
