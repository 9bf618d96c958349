"""Audio a client sends, as the recogniser hears it: 16 kHz mono 16-bit PCM, within the size and length limits.

WAV, and the WebM/Opus, OGG/Opus (or Vorbis) a browser's MediaRecorder writes, are decoded by PyAV, whose
wheel carries FFmpeg's decoders: nothing to install beside the Python package, and the same on every machine.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

RATE = 16_000
# what the API takes as an audio body; browsers add ";codecs=opus", which the content type drops
ACCEPTED = ("audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave", "audio/webm", "audio/ogg", "audio/opus",
            "audio/mpeg", "audio/flac", "audio/x-flac", "audio/mp4")


class AudioError(ValueError):
    """Audio refused: `status` 413 (too large) or 400 (too long, empty, not audio); the message says which."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Audio:
    """Mono 16-bit samples at 16 kHz."""

    pcm: np.ndarray

    @property
    def seconds(self) -> float:
        return len(self.pcm) / RATE

    def wav(self) -> bytes:
        """The samples as a WAV file (for a back-end that takes a file)."""
        import wave

        out = io.BytesIO()
        with wave.open(out, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(self.pcm.tobytes())
        return out.getvalue()


def decode(data: bytes, *, max_seconds: float) -> Audio:
    """The audio in `data` (any container FFmpeg reads) at 16 kHz mono; AudioError when it is empty, not
    audio, or longer than `max_seconds` (decoding stops there: a long file costs no more than the limit)."""
    import av  # PyAV: FFmpeg's decoders in its wheel

    if not data:
        raise AudioError(400, "the audio body is empty; send a recording (WAV, WebM/Opus or OGG)")
    limit = int(max_seconds * RATE)
    chunks: list[np.ndarray] = []
    have = 0
    try:
        with av.open(io.BytesIO(data), mode="r", metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise AudioError(400, "the body holds no audio stream; send WAV, WebM/Opus or OGG")
            resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
            for frame in container.decode(audio=0):
                for out in resampler.resample(frame):
                    chunk = out.to_ndarray().reshape(-1)
                    chunks.append(chunk)
                    have += len(chunk)
                if have > limit:
                    raise AudioError(400, f"the recording is longer than {max_seconds:g} s ([ask.voice] "
                                          "max_audio_s); ask a shorter question")
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().reshape(-1))
    except AudioError:
        raise
    except (av.error.FFmpegError, ValueError, EOFError, OSError) as exc:
        raise AudioError(400, f"the audio could not be decoded ({type(exc).__name__}); send WAV, WebM/Opus "
                              "or OGG as recorded") from None
    pcm = np.concatenate(chunks).astype(np.int16, copy=False) if chunks else np.zeros(0, np.int16)
    if len(pcm) > limit:
        raise AudioError(400, f"the recording is longer than {max_seconds:g} s ([ask.voice] max_audio_s); "
                              "ask a shorter question")
    if len(pcm) < RATE // 10:
        raise AudioError(400, "the recording is shorter than 0.1 s: nothing to hear")
    return Audio(pcm)
