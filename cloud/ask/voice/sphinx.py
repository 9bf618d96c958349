"""The CPU recogniser: pocketsphinx 5 with the US-English model its wheel ships, told the site's words.

Each question is decoded with the site's language model (cloud.ask.voice.sitelm: the router's question forms,
with the operator's camera and zone names). When that reading is unlikely (its posterior under
`GENERAL_BELOW`: the speaker said something the site's model does not know) it is decoded again with the
general English model of the wheel, and the likelier reading is kept: "porch" and "after midnight" are
heard, and general English still works. The site model is rebuilt when the names change; its words also get
the pronunciations of non-rhotic Englishes (cloud.ask.voice.accents). Where the likeliest site reading is one
the router's rules cannot answer, the n-best list is looked through for the first reading they can.

One decoder, used by one thread at a time (pocketsphinx is not thread-safe): a lock, and the work on a thread of
its own, never the event loop's default executor (where the cloud embeds and stores events: twenty long clips
there held every event behind them). Non-speech (noise, a tone, music) can leave the decoder with no reading at
all, or an n-best entry that is None: that is nothing heard (''), never an error.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..vocab import QUESTION_WORDS
from .accents import pronunciations
from .audio import Audio
from .config import VoiceConfig
from .sitelm import arpa, plain, site_sentences

log = logging.getLogger("edgetriage.cloud.ask.voice")

NBEST = 10  # the site reading's alternatives looked through for one the router answers
GENERAL_BELOW = 1e-4  # the site reading's posterior under which the general model is tried too
# a microphone's noise floor (about -60 dBFS), added to what is heard: the model learnt from recorded speech,
# and a digitally silent gap (synthesised speech, a muted browser track) gives it features it never saw
NOISE_FLOOR = 30.0
# the search: the site's model is small, so wide beams cost little and keep the words a narrow beam drops for
# sounds the US model scores poorly (other accents, synthetic voices); 16 of each codebook's Gaussians (not 4)
# score each frame: about twice the acoustic work, still under a fifth of real time
SEARCH = {"beam": 1e-80, "wbeam": 1e-60, "pbeam": 1e-80, "maxhmmpf": -1, "topn": 16}


class SphinxTranscriber:
    name = "pocketsphinx"

    def __init__(self, config: VoiceConfig, names: Callable[[], Iterable[str]],
                 reads: Callable[[str], bool] | None = None) -> None:
        self.config = config
        self.names = names
        self.reads = reads  # whether the router answers a text by its rules (see _readable)
        self._decoder: Any = None
        self._site_names: frozenset[str] | None = None
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="transcribe")
        self._dir = tempfile.TemporaryDirectory(prefix="edgetriage-voice-")
        self.general_passes = 0  # questions the site model did not know (decoded twice)

    async def transcribe(self, audio: Audio) -> str:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.transcribe_now, audio)

    def transcribe_now(self, audio: Audio) -> str:
        with self._lock:
            decoder = self._ready()
            raw = self._floored(audio.pcm).tobytes()
            site = self._decode(decoder, "site", raw)
            if site is not None and site.prob >= GENERAL_BELOW:
                return self._readable(decoder, plain(site.hypstr))
            self.general_passes += 1
            general = self._decode(decoder, None, raw)
            best = max((h for h in (site, general) if h is not None), key=lambda h: h.score, default=None)
            return plain(best.hypstr) if best is not None else ""

    def _readable(self, decoder: Any, best: str) -> str:
        """The likeliest reading; when the router cannot answer it by its rules, the first of the next likeliest
        that it can: "how many people were at the porch", not "... people wear at ..." (which reads as an open
        question about clothes), where the sound barely tells the two apart."""
        if self.reads is None or self.reads(best):
            return best
        for hypothesis in itertools.islice(decoder.nbest(), NBEST):
            if hypothesis is None or not hypothesis.hypstr:  # non-speech: an entry with no reading
                continue
            text = plain(hypothesis.hypstr)
            if self.reads(text):
                return text
        return best

    @staticmethod
    def _floored(pcm: np.ndarray) -> np.ndarray:
        noise = np.random.default_rng(len(pcm)).normal(0.0, NOISE_FLOOR, len(pcm))
        return np.clip(pcm + noise, -32768, 32767).astype(np.int16)

    @staticmethod
    def _decode(decoder: Any, search: str | None, raw: bytes) -> Any:
        decoder.activate_search(search)
        decoder.start_utt()
        decoder.process_raw(raw, full_utt=True)
        decoder.end_utt()
        return decoder.hyp()

    def _ready(self) -> Any:
        """The decoder, its site model matching the names now (built on first use: about half a second)."""
        if self._decoder is None:
            from pocketsphinx import Decoder

            self._decoder = Decoder(loglevel="ERROR", lw=self.config.language_weight, dither=True, **SEARCH)
        names = frozenset(self.names())
        if names != self._site_names:
            self._site_model(names)
        return self._decoder

    def _site_model(self, names: frozenset[str]) -> None:
        decoder = self._decoder
        sentences = site_sentences(names, QUESTION_WORDS)
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
        self._executor.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            self._decoder = None
        self._dir.cleanup()
