"""Questions by voice: audio in (cloud.ask.voice.audio), text out (a Transcriber), then the question router."""
