"""Questions in words, answered the way events are: the cheapest step that can, each step counted.

    1. cache       the same normalised question about the same data, answered before (cache.py)
    2. rules       a plain query (count, last, first, list, exists) with camera/label/verdict/time words
                   (rules.py) -> answered from the store (query.py)
    3. complexity  the rest: a small classifier (complexity.py) scores it; below [ask] complexity_threshold
                   the fast path answers it as a query
    4. llm         the events a retrieval step picks (time range, camera, label, then BM25; retrieve.py) and
                   the question go to the configured back-end (llm.py); the answer may cite only those
                   events, checked after generation. When the LLM path would break [ask] t_max_ms (its
                   recent median times the questions ahead of this one, or the model not answering in time)
                   the fast path answers instead, marked "partial".

Every answer carries `reading`, one line of how the question was read (what was counted, where, when, in which
zone, the filters: reading.py), and names the words no rule used; "how many people" counts people, not events
(visits.py); a comparison counts both sides (compare.py).

Latency model (figures(), beside the events' in /v1/stats): α = answers without the LLM ÷ answers,
L_total = L_sched + α·L_fast + (1−α)·L_llm, with L_sched the time to decide the route, L_fast the median of
cache/rules/fast answers and L_llm the median of LLM answers.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from ...shared.clock import now_ms
from ...shared.ids import CAMERA_ID_RE, DEVICE_ID_RE
from ...shared.stats import median as _median
from ...shared.text import shown
from ...shared.yielding import yielding_thread
from ..config import AnalyzerConfig
from ..ops.observed import Listened
from ..storage.reads import ThreadReads, reads_of
from ..storage.store import Store
from .cache import AnswerCache, Coverage
from .compare import compared, sides_of
from .complexity import ComplexityModel
from .config import AskConfig
from .facts import EventFact
from .guard import AskError, check_question
from .llm import TextModel, TextModelError, build_text_model
from .query import Answer, answer, loose_intent
from .ranked import about, counted_over, ranked, read_per, superlative_of
from .reading import both_read, model_unread, read_back, told_unused
from .retrieve import pick
from .rules import Query, Window, normalise, read
from .scan import scan
from .vocab import Vocabulary, split_quoted
from .when import unread_time

if TYPE_CHECKING:
    from ..counts.pressure import EventPressure

log = logging.getLogger("edgetriage.cloud.ask")

ROUTES = ("cache", "rules", "fast", "llm")
DAY_MS = 86_400_000
WINDOW = 2048  # latency samples kept per route
VOCABULARY_REFRESH_S = 5.0  # without a service to tell us of new events, re-read cameras this often
SYSTEM = ("You answer questions about what home security cameras saw. Use only the numbered events given. "
          "Answer in one or two short sentences and cite the events you used by number in brackets, like [2].")
_CITE = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
# what reads as an event id in a model's text: a UUID, or a long run of hex digits (a cut or made-up one)
_ID_LIKE = (r"\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b|\b(?=[0-9a-f-]*\d)(?=[0-9a-f-]*[a-f])"
            r"[0-9a-f]{6,}(?:-[0-9a-f]{2,})*\b")
_NAMED_ID = re.compile(rf"(?:\b(?:event id|event|id)\s*[:#]?\s*)?(?P<id>{_ID_LIKE})", re.IGNORECASE)


def _p95(values) -> float | None:
    data = sorted(values)
    return round(data[min(len(data) - 1, int(0.95 * len(data)))], 2) if data else None


class AskStats:
    """Answers per route and their latencies (ms), the scheduling time, partial answers and citations."""

    def __init__(self) -> None:
        self.routes = dict.fromkeys(ROUTES, 0)
        self.latency = {route: deque(maxlen=WINDOW) for route in ROUTES}
        self.partial_ms: deque[float] = deque(maxlen=WINDOW)  # fast answers after the LLM path gave up
        self.sched_ms: deque[float] = deque(maxlen=WINDOW)
        self.partial = 0
        self.refused = 0
        self.dropped_citations = 0  # [n] markers the model wrote that name no event it was given
        self.llm_errors = 0


@dataclass
class _Pending:
    """A question read and its events found on a worker thread, waiting for the text model on the loop."""

    text: str
    query: Query
    key: tuple
    devices: set[str] | None
    zone: ZoneInfo
    score: float
    started: float
    decided: float
    fast: Answer  # the fast path's answer, should the model not give one
    context: list[EventFact]  # the events the model reads
    facts: list[EventFact]  # the question's events, for an answer from them should the model give none
    usual: list[EventFact] | tuple  # the same cameras at any time (what is usual there)
    reading: tuple[str, list[str]]  # how the question was read, and the words it could not use


class Asker:
    """Answers questions about the events in `store`. Its synchronous work (reading the question, scanning
    the store, ranking, formatting) runs on `[ask] workers` threads of its own with their own read connection
    (cloud.storage.reads), so an event's verdict never waits for a question; only the wait for the text
    model is on the event loop."""

    def __init__(self, store: Store, config: AskConfig, analyzer: AnalyzerConfig | None = None, *,
                 text_model: TextModel | None = None, complexity: ComplexityModel | None = None,
                 clock_ms: Callable[[], float] | None = None, timer: Callable[[], float] | None = None) -> None:
        self.store = store
        self.reads = reads_of(store)
        self.config = config
        self.text_model = text_model if text_model is not None else build_text_model(analyzer or AnalyzerConfig())
        self.complexity = complexity or ComplexityModel.load()
        self.clock_ms = clock_ms or now_ms  # wall time, for time words
        self.timer = timer or time.perf_counter  # seconds, for latencies and the text model's budget
        self.cache = AnswerCache(config.cache_ttl_s, config.cache_entries, self.clock_ms)
        self.stats = AskStats()
        self._stats_lock = threading.Lock()  # answers are counted on the worker threads, read on the loop
        self._vocabulary: Vocabulary | None = None
        self._vocabulary_at = 0.0
        self._vocabulary_lock = threading.Lock()
        self.attached = False
        self._llm_queue = 0  # LLM answers running or waiting
        self.pressure: EventPressure | None = None  # the service's events worked on now: a worker gives way to them
        self._pool = ThreadPoolExecutor(config.workers, thread_name_prefix="ask", initializer=yielding_thread)

    def close(self) -> None:
        """Stop the worker threads (after the questions in hand) and close their read connections."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        if isinstance(self.reads, ThreadReads):
            self.reads.close()

    # -- keeping up with the store ---------------------------------------------------------------------
    def attach(self, service: Listened) -> None:
        """Hear of every new event and verdict: the vocabulary learns names, the cache drops answers."""
        service.event_listeners.append(self.event_landed)
        service.verdict_listeners.append(self.verdict_landed)
        self.pressure = service.pressure
        self.attached = True

    def event_landed(self, event: Any, received_ms: int) -> None:
        """On the event loop, for every new event: a few dictionary inserts for a new name, nothing more."""
        if self._vocabulary is not None:
            self._vocabulary.learn(event.device, event.camera, event.label, event.zones)
        self.cache.landed(event.device, event.camera, event.label, event.captured_ms)

    def verdict_landed(self, verdict: Any) -> None:
        self.cache.landed(verdict.device, verdict.camera, verdict.label, None)

    def vocabulary(self) -> Vocabulary:
        """The operator's names ([ask] cameras, zones, timezones), and the names the stored events carry,
        learned for quoting (re-read every few seconds when no service tells of new events)."""
        with self._vocabulary_lock:
            stale = not self.attached and time.monotonic() - self._vocabulary_at > VOCABULARY_REFRESH_S
            if self._vocabulary is None or stale:
                config = self.config
                vocabulary = Vocabulary({(d, c) for d, cameras in config.cameras.items() for c in cameras}, (),
                                        config.zones, devices=set(config.cameras) | set(config.timezones),
                                        max_learned=config.max_learned_names)
                for r in self.reads.list_events(limit=config.max_scan):
                    vocabulary.learn(r["device"], r["camera"], r["label"], r.get("zones") or ())
                self._vocabulary = vocabulary
                self._vocabulary_at = time.monotonic()
            return self._vocabulary

    async def warm(self) -> None:
        """Load the text model ahead of the first question that needs it (errors wait for that question)."""
        if self.text_model is not None:
            try:
                await self.text_model.warm()
            except TextModelError:
                pass

    # -- asking ----------------------------------------------------------------------------------------
    async def ask(self, question: object, *, token_device: str | None = None, device: str | None = None,
                  camera: str | None = None, since_ms: int | None = None) -> dict[str, Any]:
        """The answer as the API returns it; AskError (a 4xx) for a question refused."""
        started = self.timer()
        if self.pressure is not None:  # an event worked on now goes first, here as on the worker
            await self.pressure.quiet()
        step = await asyncio.get_running_loop().run_in_executor(
            self._pool, self._prepare, question, token_device, device, camera, since_ms, started)
        if isinstance(step, dict):
            return step
        result = await self._llm(step)
        return self._answered(step.text, step.query, step.key, step.devices, step.score, result, step.started,
                              step.decided, step.reading)

    def _prepare(self, question: object, token_device: str | None, device: str | None, camera: str | None,
                 since_ms: int | None, started: float) -> dict[str, Any] | _Pending:
        """On a worker thread: the answer (cache, rules, fast), or what the LLM path needs. At each step it
        gives way to the events the service is working on (cloud.pressure)."""
        self._give_way()
        try:
            text = check_question(question, self.config.max_question_chars)
            query, devices, zone, quoted = self._read(text, token_device, device, camera, since_ms)
        except AskError:
            with self._stats_lock:
                self.stats.refused += 1
            raise
        key = (tuple(sorted(devices or ())), normalise(split_quoted(text)[0]), quoted, camera, since_ms,
               query.window.start_ms if query.window else None, query.window.end_ms if query.window else None)
        hit = self.cache.get(key)
        if hit is not None:
            return self._finish({**hit, "cached": True, "first_route": hit["route"], "route": "cache"},
                                started, self.timer(), "cache")
        if query.intent in ("unusual", "overview") and query.window is None:  # "anything unusual?": the last day
            query = query.with_scope(window=Window(int(self.clock_ms()) - DAY_MS, None, "in the last 24 hours"))
        said = normalise(split_quoted(text)[0])
        self._give_way()
        reading = read_back(said, query, zone, int(self.clock_ms()))
        which = query.intent == "list" and bool(re.search(r"^(?:which|what|where)\b|\bwhich\b", said))  # a or b?
        sides = sides_of(said) if not query.open and (query.intent in (None, "count", "exists") or which) else None
        if sides is not None:  # "more people today than yesterday?": both counted, both shown
            now, names = int(self.clock_ms()), self.vocabulary()
            result = compared(sides, query, lambda w: read(w, names, zone, now),
                              lambda q: self._facts(q.with_scope(intent="count", measure=query.measure), devices))
            if result is not None:
                reading = both_read(*result.extra.pop("sides"), zone, now, reading[1])
                if "difference" in result.extra:  # "how many more ...": a number, both counts it stands on
                    reading = (f"{reading[0]}; the difference of {' and '.join(map(str, result.extra['counts']))}",
                               reading[1])
                return self._answered(text, query, key, devices, None, result, started, self.timer(), reading)
        asked = superlative_of(said) if not query.open and query.intent in (None, "count", "list", "exists", "last") \
            else None  # "last": "when was it busiest?"
        if asked is not None and (about(asked, query) or not asked.named):  # "which camera saw the most people?"
            now, config = int(self.clock_ms()), self.config  # each group counted, the most named
            counted = counted_over(asked, query).with_scope(intent="count")
            result = ranked(asked, query, self._facts(counted, devices), zone, now,
                            {c for cameras in config.cameras.values() for c in cameras}, config.zones)
            reading = read_per(said, query, asked, zone, now)
            return self._answered(text, query, key, devices, None, result, started, self.timer(), reading)
        facts = self._facts(query, devices)
        self._give_way()
        score = None
        if not query.rule_answerable:
            score = self.complexity.score(text)
        route = "rules" if score is None else ("llm" if score >= self.config.complexity_threshold else "fast")
        # the same cameras at any time: what is usual there (for "anything unusual?" and open answers)
        overview = query.intent in ("unusual", "overview") or route == "llm"
        usual = self._facts(query.with_scope(window=None), devices) if overview else ()
        decided = self.timer()
        if route != "llm":
            result = answer(loose_intent(query), facts, query, zone, route, usual)
            unread = unread_time(said) if query.window is None else None
            if unread:  # "last spring": over every stored event, and the answer says so
                result.extra = {**result.extra, "time_hint": unread}
            unquoted = self.vocabulary().unquoted_in(said)
            if unquoted:  # "the porch" where only a device named a camera porch: read as no camera
                names = ", ".join(f'"{n}"' for n in unquoted)
                result.extra = {**result.extra, "hint": f"{names}: a name only a device sent, matched when quoted "
                                                        f"(or name it in [ask] cameras / zones)"}
            return self._answered(text, query, key, devices, score, result, started, decided, reading)
        fast = answer(loose_intent(query), facts, query, zone, "fast")
        looked = [f for f in facts if query.look.holds(f.description)] if query.look else facts
        looked = looked or facts
        context = pick(text, looked, [f.text(zone) for f in looked], self.config.context_events) if facts else []
        return _Pending(text, query, key, devices, zone, score, started, decided, fast, context, facts, usual,
                        reading)

    def _answered(self, text: str, query: Query, key: tuple, devices: set[str] | None, score: float | None,
                  result: Answer, started: float, decided: float, reading: tuple = ("", [])) -> dict[str, Any]:
        named = reading[1] if result.route != "llm" else model_unread(reading[1])  # the model reads the rest
        body = {"answer": told_unused(result.text, named, text, query.intent == "unstored"),
                "reading": reading[0], "route": result.route, "events": result.events, "value": result.value,
                "partial": result.partial, "cached": False,
                "complexity": None if score is None else round(score, 3), "window": _window_json(query.window),
                "unused": list(reading[1]), **result.extra}
        if not result.partial:
            self.cache.put(key, body, Coverage(frozenset(devices) if devices else None,
                                               query.cameras or None, query.label,
                                               query.window.start_ms if query.window else None,
                                               query.window.end_ms if query.window else None))
        return self._finish(body, started, decided, result.route, partial=result.partial)

    def _finish(self, body: dict[str, Any], started: float, decided: float, route: str, *,
                partial: bool = False) -> dict[str, Any]:
        done = self.timer()
        latency = (done - started) * 1000
        stats = self.stats
        with self._stats_lock:
            stats.routes[route] += 1
            (stats.partial_ms if partial else stats.latency[route]).append(latency)
            stats.sched_ms.append((decided - started) * 1000)
            stats.partial += partial
        return {**body, "latency_ms": round(latency, 2)}

    def _read(self, text: str, token_device: str | None, device: str | None, camera: str | None,
              since_ms: int | None) -> tuple[Query, set[str] | None, ZoneInfo, tuple[str, ...]]:
        """The question's query, narrowed to what the caller may read and asked for, the zone its times are
        read in (that of the devices it is about) and the names it quotes; AskError otherwise."""
        if device is not None and not DEVICE_ID_RE.match(device):
            raise AskError(400, f"device={shown(device)} is not a device id ([a-z0-9-], at most 64)")
        if camera is not None and not CAMERA_ID_RE.match(camera):
            raise AskError(400, f"camera={shown(camera)} is not a camera id ([a-z0-9_-], at most 64)")
        if token_device is not None and device is not None and device != token_device:
            raise AskError(403, f"the token of device {token_device} may not ask about device {device}")
        vocabulary = self.vocabulary()
        devices = {token_device} if token_device else {device} if device else None
        words, quoted = split_quoted(text)
        named = vocabulary.quoted(quoted, devices)
        if named.unknown:
            raise AskError(404, "no camera, zone, device or label" + (f" of device {token_device}" if token_device
                                                                     else "") + " is named "
                           + ", ".join(f'"{n[:40]}"' for n in named.unknown[:3])
                           + " in the events stored (quotes are for names; leave them out to ask in words)")
        everyone = vocabulary.all_devices()
        zone = self.config.zone_for(devices or set(named.devices) or {d for d, _ in named.cameras} or everyone)
        query = self._with_quoted(read(words, vocabulary, zone, int(self.clock_ms())), named)
        about = self.config.zone_for(devices or set(query.devices) or {d for d, _ in query.cameras} or everyone)
        if about != zone:  # the question names a camera or device with a zone of its own: read it again there
            zone, query = about, self._with_quoted(read(words, vocabulary, about, int(self.clock_ms())), named)
        if token_device is not None:
            foreign = sorted({c for d, c in query.cameras if d != token_device} - {c for d, c in query.cameras
                                                                                    if d == token_device})
            others = sorted(query.devices - {token_device})
            if foreign or others:
                what = f"camera {', '.join(foreign)}" if foreign else f"device {', '.join(others)}"
                raise AskError(403, f"the token of device {token_device} may not ask about {what}")
        cameras = query.cameras
        if devices:
            cameras = frozenset(p for p in cameras if p[0] in devices)
        elif query.devices:
            devices = set(query.devices)
        if camera is not None:
            known = vocabulary.cameras_named(camera, devices)
            if not known:
                # 404 whether it is another device's or no camera at all: a device learns nothing of others
                raise AskError(404, f"camera={camera!r}: no events from such a camera"
                                       + (f" of device {token_device}" if token_device else ""))
            cameras = frozenset(known)
        window = query.window
        if since_ms is not None:
            since = Window(since_ms, None, "since the time given")
            window = since if window is None else Window(max(since_ms, window.start_ms or 0), window.end_ms,
                                                         window.phrase)
        return query.with_scope(cameras=cameras, window=window), devices, zone, quoted

    @staticmethod
    def _with_quoted(query: Query, named) -> Query:
        """The query with the names the question quoted added to those it names as words."""
        return query.with_scope(cameras=query.cameras | named.cameras, zones=query.zones | named.zones,
                                devices=query.devices | named.devices, label=named.label or query.label)

    def _facts(self, query: Query, devices: set[str] | None) -> list[EventFact]:
        """Every event the question covers, newest first (cloud.ask.scan), giving way to events meanwhile."""
        return scan(self.reads, self.config, query, devices, self._give_way)

    def _give_way(self) -> None:
        if self.pressure is not None:
            self.pressure.give_way()

    # -- the LLM path ----------------------------------------------------------------------------------
    def _llm_estimate_ms(self) -> float:
        with self._stats_lock:
            typical = _median(self.stats.latency["llm"]) or 0.0
        return typical * (self._llm_queue + 1)

    async def _llm(self, step: _Pending) -> Answer:
        """On the event loop: the text model's answer to a question whose events a worker found."""
        fast, context = step.fast, step.context
        if not context:
            return fast  # nothing for a model to read: the query's "no events" is the whole answer
        if self.text_model is None:
            return _partial(fast, "no text model for this [analyzer] backend (use openai with `vllm serve`)")
        budget_ms = self.config.t_max_ms - (self.timer() - step.started) * 1000
        if self._llm_estimate_ms() > budget_ms:
            return _partial(fast, f"the language model would take longer than t_max_ms ({self.config.t_max_ms:g} ms)")
        lines = "\n".join(f"[{i}] {f.line(step.zone)}" for i, f in enumerate(context, 1))
        prompt = f"Events (local time):\n{lines}\n\nQuestion: {step.text}"
        self._llm_queue += 1
        begun = self.timer()
        try:
            raw = await asyncio.wait_for(
                self.text_model.complete(SYSTEM, prompt, self.config.max_new_tokens, budget_ms / 1000 * 0.9),
                timeout=max(0.05, budget_ms / 1000))
        except (TimeoutError, TextModelError) as exc:
            with self._stats_lock:
                self.stats.llm_errors += 1
            reason = "no answer within t_max_ms" if isinstance(exc, TimeoutError) else str(exc)
            return _partial(fast, reason)
        finally:
            self._llm_queue -= 1
        if (self.timer() - begun) * 1000 >= budget_ms * 0.9:
            return _partial(fast, "the language model ran out of time (t_max_ms)")
        said, cited, dropped = cite(raw, context)
        with self._stats_lock:
            self.stats.dropped_citations += dropped
        if not said or said.lower().startswith(("events (", "question:", "[1]")):  # empty, or the prompt echoed
            told = answer("overview", step.facts, step.query, step.zone, "llm", step.usual)
            told.extra = {"from_facts": "the language model gave no usable answer; answered from the stored facts"}
            return told
        return Answer(said, "llm", [f.event_id for f in cited], value=None,
                      extra={"model": getattr(self.text_model, "name", "llm"), "context": len(context)})

    def figures(self) -> dict[str, Any]:
        """α and the latency model for questions (one measurement, read by /v1/stats and the page)."""
        with self._stats_lock:
            figures = _figures(self.stats, self.config.t_max_ms, self.cache)
        if self.pressure is not None:  # steps that waited for the event path, and how long in all
            figures.update(gave_way=self.pressure.gave_way, gave_way_s=round(self.pressure.waited_s, 3))
        return figures



def _figures(s: AskStats, t_max_ms: float, cache: AnswerCache) -> dict[str, Any]:
    """α and the latency model for questions, from the answers counted so far (under the stats lock)."""
    answered = sum(s.routes.values())
    without = answered - s.routes["llm"]
    alpha = round(without / answered, 4) if answered else None
    fast = [v for r in ("cache", "rules", "fast") for v in s.latency[r]]
    l_fast, l_llm, l_sched = _median(fast), _median(s.latency["llm"]), _median(s.sched_ms)
    l_total = None
    if alpha is not None:
        l_total = round((l_sched or 0) + alpha * (l_fast or 0) + (1 - alpha) * (l_llm or 0), 2)
    per_route = {f"{r}_p50_ms": _median(s.latency[r]) for r in ROUTES}
    per_route.update({f"{r}_p95_ms": _p95(s.latency[r]) for r in ROUTES})
    per_route["partial_p50_ms"] = _median(s.partial_ms)
    return {"alpha": alpha, "L_sched_ms": l_sched, "L_fast_ms": l_fast, "L_llm_ms": l_llm,
            "L_total_ms": l_total, "L_total_formula": "L_sched + alpha*L_fast + (1-alpha)*L_llm",
            "measured_p50_ms": _median(v for r in ROUTES for v in s.latency[r]), "t_max_ms": t_max_ms,
            "answers": answered, "routes": dict(s.routes), "partial": s.partial, "refused": s.refused,
            "llm_errors": s.llm_errors, "dropped_citations": s.dropped_citations,
            "cache_entries": len(cache), "cache_invalidated": cache.invalidated, **per_route}


def cite(raw: str, context: list[EventFact]) -> tuple[str, list[EventFact], int]:
    """The model's text with only valid [n] markers kept, renumbered to positions in the cited list; the
    events it cited (all it was given when it cited none: the answer is based on them); and how many markers
    named no event it was given. An event id written out in the text stays only when it is a cited event's."""
    text = re.sub(r"\s+", " ", raw.strip().split("\n\n")[0]).strip()[:400]
    order: list[int] = []
    dropped = 0
    for match in _CITE.finditer(text):
        for part in match[1].split(","):
            n = int(part)
            if 1 <= n <= len(context):
                if n not in order:
                    order.append(n)
            else:
                dropped += 1
    if not order:
        return _without_foreign_ids(_CITE.sub("", text), context), list(context), dropped

    def renumber(match: re.Match[str]) -> str:
        good = [str(order.index(int(p)) + 1) for p in match[1].split(",") if 1 <= int(p) <= len(context)]
        return f"[{', '.join(good)}]" if good else ""

    cited = [context[n - 1] for n in order]
    return _without_foreign_ids(_CITE.sub(renumber, text), cited), cited, dropped


def _without_foreign_ids(text: str, cited: list[EventFact]) -> str:
    """`text` without anything that reads as an event id but is not one of the `cited` events' ids (a model
    makes ids up, or copies one it was not asked to cite); spaces and punctuation left tidy."""
    allowed = {f.event_id.lower() for f in cited}
    kept = _NAMED_ID.sub(lambda m: m[0] if m["id"].lower() in allowed else "", text)
    if kept == text:
        return re.sub(r"\s+", " ", text).strip()
    kept = re.sub(r"\(\s*\)|\[\s*\]", "", kept)  # brackets the id stood in alone
    return re.sub(r"\s+([,.;:!?])", r"\1", re.sub(r"\s+", " ", kept)).strip().lstrip(",;: ")


def _partial(fast: Answer, why: str) -> Answer:
    return Answer(f"Partial answer ({why}): {fast.text}", "fast", fast.events, fast.value, partial=True,
                  extra={"partial_reason": why})


def _window_json(window: Window | None) -> dict[str, Any] | None:
    if window is None:
        return None
    return {"start_ms": window.start_ms, "end_ms": window.end_ms, "phrase": window.phrase}
