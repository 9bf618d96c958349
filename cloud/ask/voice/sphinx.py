"""The CPU recogniser: pocketsphinx 5 with the US-English model its wheel ships, told the site's words.

Each question is decoded with the site's language model (cloud.ask.voice.sitelm: the router's question forms,
with the operator's camera and zone names). When that reading is unlikely (its posterior under
`GENERAL_BELOW`: the speaker said something the site's model does not know) it is decoded again with the
general English model of the wheel, and the likelier reading is kept: "porch" and "after midnight" are
heard, and general English still works. The site model is rebuilt when the names change; its words also get
the pronunciations of non-rhotic Englishes (cloud.ask.voice.accents). Where the likeliest site reading is one
the router's rules cannot answer, the n-best list is looked through for the first reading they can.

The decoding runs in a process of its own (`Hearer`) at the lowest CPU priority (DECODER_NICENESS): pocketsphinx
holds the GIL for a whole utterance (4.5 s of every other thread's time for 10 s of audio, measured), so on any
thread of the service it would stall the event loop and every event with it, and as a process beside the service
it still takes a core the events want unless it yields. One decoder, one utterance at a time.
`transcribe_now` decodes in the calling process (the tests). Non-speech (noise, a tone, music) can leave the
decoder with no reading at all, or an n-best entry that is None: that is nothing heard (''), never an error.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import os
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..rules import NOT_TAUGHT
from ..vocab import QUESTION_WORDS
from .accents import pronunciations
from .audio import Audio
from .config import VoiceConfig
from .sitelm import arpa, plain, site_sentences

log = logging.getLogger("edgetriage.cloud.ask.voice")

# the decoding process's CPU priority: the lowest. At nice 5 it still took a quarter of a shared core from events
# (bench/abuse.py --only audio: p99 6.7x idle at load 12-18); at 19 it gets about 1.5 % of a core anything at
# nice 0 wants, and the whole core when nothing does
DECODER_NICENESS = 19
NBEST = 10  # the site reading's alternatives looked through for one the router answers
GENERAL_BELOW = 1e-4  # the site reading's posterior under which the general model is tried too
# a microphone's noise floor (about -60 dBFS), added to what is heard: the model learnt from recorded speech,
# and a digitally silent gap (synthesised speech, a muted browser track) gives it features it never saw
NOISE_FLOOR = 30.0
# the search: the site's model is small, so wide beams cost little and keep the words a narrow beam drops for
# sounds the US model scores poorly (other accents, synthetic voices); 16 of each codebook's Gaussians (not 4)
# score each frame: about twice the acoustic work, still under a fifth of real time
SEARCH = {"beam": 1e-80, "wbeam": 1e-60, "pbeam": 1e-80, "maxhmmpf": -1, "topn": 16}


class Heard(NamedTuple):
    """What one decoding found: the site model's reading (text, posterior, score) and the next likeliest of it,
    and, where the site model was unlikely, the general model's (text, score)."""

    site: tuple[str, float, int] | None
    nbest: tuple[str, ...]
    general: tuple[str, int] | None


class Hearer:
    """The decoder with the site's model for the names given (rebuilt when they change)."""

    def __init__(self, config: VoiceConfig) -> None:
        self.config = config
        self._decoder: Any = None
        self._site_names: frozenset[str] | None = None
        self._lock = threading.Lock()
        self._dir = tempfile.TemporaryDirectory(prefix="edgetriage-voice-")

    def hear(self, names: frozenset[str], pcm: np.ndarray) -> Heard:
        with self._lock:
            decoder = self._ready(names)
            raw = _floored(pcm).tobytes()
            site = _decode(decoder, "site", raw)
            if site is not None and site.prob >= GENERAL_BELOW:
                nbest = tuple(h.hypstr for h in itertools.islice(decoder.nbest(), NBEST)
                              if h is not None and h.hypstr)  # non-speech: entries with no reading
                return Heard((site.hypstr, site.prob, site.score), nbest, None)
            general = _decode(decoder, None, raw)
            return Heard(None if site is None else (site.hypstr, site.prob, site.score), (),
                         None if general is None else (general.hypstr, general.score))

    def _ready(self, names: frozenset[str]) -> Any:
        """The decoder, its site model matching the names now (built on first use: about half a second)."""
        if self._decoder is None:
            from pocketsphinx import Decoder

            self._decoder = Decoder(loglevel="ERROR", lw=self.config.language_weight, dither=True, **SEARCH)
        if names != self._site_names:
            self._site_model(names)
        return self._decoder

    def _site_model(self, names: frozenset[str]) -> None:
        decoder = self._decoder
        sentences = site_sentences(names, QUESTION_WORDS - NOT_TAUGHT)
        words = sorted({w for sentence in sentences for w in sentence if decoder.lookup_word(w) is not None})
        extra = pronunciations(words, decoder.lookup_word)
        for i, (word, phones) in enumerate(extra):  # the site's words as other Englishes say them
            decoder.add_word(word, phones, i == len(extra) - 1)
        text = arpa(sentences, lambda w: decoder.lookup_word(w) is not None)
        path = Path(self._dir.name) / "site.arpa"
        path.write_text(text, encoding="utf-8")
        decoder.add_lm_file("site", str(path))  # replaces the search of that name
        self._site_names = names
        log.info("voice: the site's language model has %d names", len(names))

    def close(self) -> None:
        with self._lock:
            self._decoder = None
        self._dir.cleanup()


_worker: Hearer | None = None  # the decoding process's own Hearer (made by _start_worker in that process only)


def _start_worker(config: VoiceConfig) -> None:
    global _worker  # noqa: PLW0603 - one per worker process, the process pool's way to keep state
    try:  # questions give way to events on a busy machine: the lowest priority there is, relative or not
        os.setpriority(os.PRIO_PROCESS, 0, DECODER_NICENESS)
    except (AttributeError, OSError):  # not a Unix, or not allowed
        pass
    _worker = Hearer(config)


def _hear_in_worker(names: frozenset[str], pcm: np.ndarray) -> Heard:
    assert _worker is not None
    return _worker.hear(names, pcm)


class SphinxTranscriber:
    name = "pocketsphinx"

    def __init__(self, config: VoiceConfig, names: Callable[[], Iterable[str]],
                 reads: Callable[[str], bool] | None = None) -> None:
        self.config = config
        self.names = names
        self.reads = reads  # whether the router answers a text by its rules (see _readable)
        self._local: Hearer | None = None  # transcribe_now's, made on first use
        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_start_worker, initargs=(config,))
        self.general_passes = 0  # questions the site model did not know (decoded twice)

    async def transcribe(self, audio: Audio) -> str:
        heard = await asyncio.get_running_loop().run_in_executor(
            self._pool, _hear_in_worker, frozenset(self.names()), audio.pcm)
        return self._words(heard)

    def transcribe_now(self, audio: Audio) -> str:
        if self._local is None:
            self._local = Hearer(self.config)
        return self._words(self._local.hear(frozenset(self.names()), audio.pcm))

    def _words(self, heard: Heard) -> str:
        if heard.general is None and heard.site is not None:
            return self._readable(plain(heard.site[0]), heard.nbest)
        self.general_passes += 1
        readings = [(r[0], r[-1]) for r in (heard.site, heard.general) if r is not None]  # (text, score)
        return plain(max(readings, key=lambda r: r[1])[0]) if readings else ""

    def _readable(self, best: str, nbest: tuple[str, ...]) -> str:
        """The likeliest reading; when the router cannot answer it by its rules, the first of the next likeliest
        that it can: "how many people were at the porch", not "... people wear at ..." (which reads as an open
        question about clothes), where the sound barely tells the two apart."""
        if self.reads is None or self.reads(best):
            return best
        for hypothesis in nbest:
            text = plain(hypothesis)
            if self.reads(text):
                return text
        return best

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._local is not None:
            self._local.close()


def _floored(pcm: np.ndarray) -> np.ndarray:
    noise = np.random.default_rng(len(pcm)).normal(0.0, NOISE_FLOOR, len(pcm))
    return np.clip(pcm + noise, -32768, 32767).astype(np.int16)


def _decode(decoder: Any, search: str | None, raw: bytes) -> Any:
    decoder.activate_search(search)
    decoder.start_utt()
    decoder.process_raw(raw, full_utt=True)
    decoder.end_utt()
    return decoder.hyp()
