"""Remote configuration and model updates, the way a fleet is run: the cloud publishes a retained JSON
message on `<prefix>/v1/<device>/config` and the device takes it, or refuses it with a reason.

    {"version": "2024-06-01.2",                       required, 1-64 characters
     "config": {"rules": {"min_score": 0.3},          sections merged over the device's own file
                "budget": {"per_minute": 10},
                "cameras": {"door": {"detect_fps": 2}}},
     "model": {"sha256": "<64 hex>", "name": "ssdlite_person_int8", "entry": {...manifest entry...}}}

The message is shared.protocol.RemoteConfig (one encoder, `cloud push-config`; one decoder, here).
A remote config is always merged over the device's own file, never over an earlier remote one, so every
message says the whole difference and the same message always gives the same result. Only the sections in
`REMOTE_SECTIONS` may change; connection, identity and storage settings stay in the device's file, so a bad
message can never cut the device off its broker. The model is fetched from the cloud API by sha256
(`GET /v1/models/{sha256}`), written beside its hash and checked before it is loaded; a model that fails
any step leaves the running one in place.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..shared.config import ConfigError, validate_config
from ..shared.modelfiles import ModelError, ModelFile, manifest, resolve, sha256_of
from ..shared.protocol import MAX_CONFIG_BYTES, RemoteConfigError, decode_remote_config
from .config import EdgeConfig, RemoteUpdateConfig
from .vision.detect import BACKENDS, Detector, DetectorConfig, build_detector, model_key

log = logging.getLogger("edgetriage.edge.remote")

REMOTE_SECTIONS = ("rules", "vision", "cache", "budget", "overload", "cameras")
_CHUNK = 1 << 16


class RemoteRefused(ValueError):
    """A remote config the device will not take; `reason` says what was wrong and where."""

    def __init__(self, reason: str, version: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.version = version


@dataclass(frozen=True)
class ModelAnnouncement:
    """A detector model named by the hash of its file; `entry` describes it when the device's own
    manifest does not."""

    sha256: str
    name: str | None = None
    entry: dict[str, Any] | None = None


@dataclass(frozen=True)
class RemoteUpdate:
    version: str
    config: EdgeConfig
    model: ModelAnnouncement | None
    payload: bytes


def parse_update(payload: bytes, base: EdgeConfig) -> RemoteUpdate:
    """Validate a config message (shared.protocol.RemoteConfig) against the device's own file `base`;
    RemoteRefused says why not."""
    try:
        message = decode_remote_config(payload)
    except RemoteConfigError as exc:
        raise RemoteRefused(exc.reason, exc.version) from None
    config = merge_config(base, dict(message.config), message.version)
    model = message.model
    announced = ModelAnnouncement(model.sha256, model.name, model.entry) if model is not None else None
    return RemoteUpdate(message.version, config, announced, payload)


def merge_config(base: EdgeConfig, patch: dict[str, Any], version: str) -> EdgeConfig:
    """`base` with the sections of `patch` merged in, validated as a whole."""
    local_only = sorted(k for k in patch if k not in REMOTE_SECTIONS and k in EdgeConfig.model_fields)
    if local_only:
        raise RemoteRefused(f"{', '.join(local_only)}: cannot be changed remotely; only "
                            f"{', '.join(REMOTE_SECTIONS)} can (edit the device's own file for the rest)", version)
    unknown = sorted(k for k in patch if k not in EdgeConfig.model_fields)
    if unknown:
        raise RemoteRefused(f"{', '.join(unknown)}: unknown section (check the spelling; sections that may "
                            f"change remotely: {', '.join(REMOTE_SECTIONS)})", version)
    data: dict[str, Any] = {name: getattr(base, name) for name in EdgeConfig.model_fields}
    for key, value in patch.items():
        if key == "cameras":
            data["cameras"] = _patch_cameras(base, value, version)
        elif not isinstance(value, dict):
            raise RemoteRefused(f"{key}: must be an object of settings", version)
        else:
            data[key] = _deep_merge(getattr(base, key).model_dump(), value)
    try:
        return validate_config(EdgeConfig, data, f"remote config {version}")
    except ConfigError as exc:
        raise RemoteRefused(str(exc), version) from None


def _patch_cameras(base: EdgeConfig, value: Any, version: str) -> list[dict[str, Any]]:
    if not isinstance(value, dict):
        raise RemoteRefused("cameras: must be an object keyed by camera id, e.g. {\"door\": {\"detect_fps\": 2}}",
                            version)
    known = {cam.id for cam in base.cameras}
    missing = sorted(set(value) - known)
    if missing:
        raise RemoteRefused(f"cameras: no camera {', '.join(missing)} on this device (it has "
                            f"{', '.join(sorted(known))}); cameras are added in the device's own file", version)
    cameras = []
    for cam in base.cameras:
        change = value.get(cam.id, {})
        if not isinstance(change, dict) or "id" in change:
            raise RemoteRefused(f"cameras.{cam.id}: must be an object of camera settings other than id", version)
        cameras.append(_deep_merge(cam.model_dump(), change))
    return cameras


def _deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


# -- models ------------------------------------------------------------------------------------------------
def running_model(config: DetectorConfig) -> ModelFile:
    """The manifest entry and file of the model `config` names (not re-hashed: it was checked at load)."""
    return resolve(model_key(config), verify=False)


class ModelFetcher:
    """Fetches announced models from the cloud API into `models_dir/<sha256>.onnx`, checking the hash
    while the bytes arrive; a file already there is reused after the same check."""

    def __init__(self, api_url: str, models_dir: str | Path, *, token: str | None = None, timeout_s: float = 60.0,
                 max_bytes: int = 256 * 1024 * 1024) -> None:
        self.api_url = api_url.rstrip("/")
        self._token = token  # the device's bearer token; never logged
        self.models_dir = Path(models_dir)
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes

    @classmethod
    def from_config(cls, config: RemoteUpdateConfig) -> ModelFetcher:
        """The fetcher [remote] describes (its `models_dir` resolved by the device config)."""
        return cls(config.api_url, config.models_dir, token=config.secret_token(), timeout_s=config.fetch_timeout_s,
                   max_bytes=config.max_model_bytes)

    def path_for(self, sha256: str) -> Path:
        return self.models_dir / f"{sha256}.onnx"

    def model_file(self, announcement: ModelAnnouncement) -> ModelFile:
        """The verified local file of the announced model, downloading it when needed. ModelError says
        what failed (not found, wrong hash, too big, unreachable, no description)."""
        entry = self.entry_for(announcement)
        path = self.path_for(announcement.sha256)
        if not (path.is_file() and sha256_of(path) == announcement.sha256):
            self._download(announcement.sha256, path)
        return ModelFile(announcement.name or entry.get("name") or announcement.sha256[:12], path, entry)

    def entry_for(self, announcement: ModelAnnouncement) -> dict[str, Any]:
        """How to run the model: the announced entry, else this device's manifest entry with that hash,
        else the manifest entry of that name (a retrained file of a known model)."""
        entry: dict[str, Any] | None = announcement.entry
        models = manifest()["models"]
        if entry is None:
            entry = next((dict(e) for e in models.values() if e.get("sha256") == announcement.sha256), None)
        if entry is None and announcement.name in models:
            entry = dict(models[announcement.name])
        if entry is None:
            raise ModelError(f"model {announcement.sha256[:12]}…: unknown to this device and announced without "
                             "a manifest entry; push it with its name or entry")
        labels_file = entry.get("labels_file")
        if labels_file is not None and (not isinstance(labels_file, str) or ".." in Path(labels_file).parts
                                        or Path(labels_file).is_absolute()):
            raise ModelError(f"model {announcement.sha256[:12]}…: labels_file {labels_file!r} must be a path "
                             "inside the package's models folder")
        if entry.get("task") != "detect" or entry.get("family") not in BACKENDS:
            raise ModelError(f"model {announcement.sha256[:12]}…: task {entry.get('task')!r}, family "
                             f"{entry.get('family')!r} is not a detector this device runs "
                             f"(families: {', '.join(sorted(BACKENDS))})")
        return {**entry, "sha256": announcement.sha256}

    def _download(self, sha256: str, path: Path) -> None:
        url = f"{self.api_url}/v1/models/{sha256}"
        self.models_dir.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(".part")
        digest = hashlib.sha256()
        size = 0
        try:
            request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self._token}"}
                                             if self._token else {})
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response, open(part, "wb") as out:
                while block := response.read(_CHUNK):
                    size += len(block)
                    if size > self.max_bytes:
                        raise ModelError(f"model {sha256[:12]}…: {url} sends more than remote.max_model_bytes "
                                         f"({self.max_bytes}); refused")
                    digest.update(block)
                    out.write(block)
        except urllib.error.HTTPError as exc:
            part.unlink(missing_ok=True)
            hint = "; set remote.api_token (or EDGETRIAGE_DEVICE_TOKEN)" if exc.code in (401, 403) else ""
            raise ModelError(f"model {sha256[:12]}…: {url} answered {exc.code} {exc.reason}{hint}") from None
        except (urllib.error.URLError, OSError) as exc:
            part.unlink(missing_ok=True)
            reason = getattr(exc, "reason", exc)
            raise ModelError(f"model {sha256[:12]}…: cannot fetch {url}: {reason}; check remote.api_url") from None
        except ModelError:
            part.unlink(missing_ok=True)
            raise
        actual = digest.hexdigest()
        if actual != sha256:
            part.unlink(missing_ok=True)
            raise ModelError(f"model {sha256[:12]}…: the {size} bytes fetched from {url} hash to {actual[:12]}…, "
                             "not the announced sha256; refused, the running model is kept")
        part.replace(path)


def load_detector(config: DetectorConfig, model: ModelFile | None) -> Detector:
    """A ready detector: the configured model (`model` None) or the given file, tried once on a grey frame
    so a model that loads but cannot run is refused before it replaces anything."""
    if model is None:
        detector = build_detector(config)
    else:
        backend = BACKENDS.get(model.entry.get("family", ""))
        if backend is None:
            raise ModelError(f"model {model.name!r}: family {model.entry.get('family')!r} has no back-end here")
        detector = backend(config, model)
    try:
        detector.detect(np.full((240, 320, 3), 127, np.uint8))
    except Exception as exc:  # noqa: BLE001 - any failure of a new model means: keep the old one
        raise ModelError(f"model {model.name if model else config.model!r}: a trial detection failed: {exc}") from None
    return detector


# -- the device's remote-update state ----------------------------------------------------------------------
REMOTE_FILE = "remote-config.json"
MODEL_FILE = "running-model.json"  # the announced model last swapped in: kept if a later one is refused


def _now_ms() -> int:
    return int(time.time() * 1000)


class RemoteFiles:
    """What the device keeps over a restart in its state_dir: the remote config it applied and the announced
    model it last swapped in. A file that cannot be written or read is said once and otherwise ignored."""

    def __init__(self, state_dir: str | Path, file_config: EdgeConfig) -> None:
        self.remote_path = Path(state_dir) / REMOTE_FILE
        self.model_path = Path(state_dir) / MODEL_FILE
        self.file_config = file_config

    def save(self, update: RemoteUpdate) -> None:
        try:
            self.remote_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.remote_path.with_suffix(".tmp")
            tmp.write_bytes(update.payload)
            tmp.replace(self.remote_path)
        except OSError as exc:
            log.warning("cannot save the remote config to %s (%s); it is applied but not kept over a restart",
                        self.remote_path, exc)

    def clear(self) -> None:
        self.remote_path.unlink(missing_ok=True)

    def save_running_model(self, model: ModelAnnouncement | None) -> None:
        try:
            if model is None:
                self.model_path.unlink(missing_ok=True)
            else:
                self.model_path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.model_path.with_suffix(".tmp")
                tmp.write_text(json.dumps(dataclasses.asdict(model)), encoding="utf-8")
                tmp.replace(self.model_path)
        except OSError as exc:
            log.warning("cannot record the running model in %s: %s", self.model_path, exc)

    def last_model(self) -> ModelAnnouncement | None:
        try:
            data = json.loads(self.model_path.read_text(encoding="utf-8"))
            return ModelAnnouncement(str(data["sha256"]), data.get("name"), data.get("entry"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring %s: %s", self.model_path, exc)
            return None

    def load_saved(self) -> RemoteUpdate | None:
        try:
            payload = self.remote_path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("cannot read the saved remote config %s: %s", self.remote_path, exc)
            return None
        try:
            return parse_update(payload, self.file_config)
        except RemoteRefused as exc:
            log.warning("ignoring the saved remote config %s (%s); the device's own file applies until the "
                        "broker sends a new one", self.remote_path, exc.reason.replace("\n", "; "))
            return None


@dataclass(frozen=True)
class DetectorSpec:
    """What the detector should be: its settings and, when announced remotely, the model file by hash."""

    config: DetectorConfig
    model: ModelAnnouncement | None = None


@dataclass
class _Loaded:
    spec: DetectorSpec
    detector: Detector | None
    name: str
    sha256: str
    error: str = ""


def configured_model(config: DetectorConfig) -> tuple[str, str]:
    """(name, sha256) of the model the settings name; the sha256 is empty when the manifest lacks it."""
    try:
        model = running_model(config)
        return model.name, str(model.entry.get("sha256", ""))
    except ModelError:
        return config.model, ""


class ModelLoader:
    """The detector model's state machine: what runs, what is wanted and what a background thread is
    fetching, checking and building. `collect()` (main thread) swaps a loaded detector in through `swap`
    when it is still the one wanted; a model that fails any step is refused and the running one stays."""

    def __init__(self, fetcher: ModelFetcher, files: RemoteFiles, *, swap: Callable[[Detector], object],
                 on_change: Callable[[], None]) -> None:
        self.fetcher = fetcher
        self.files = files
        self._swap = swap
        self._on_change = on_change
        self.running: DetectorSpec | None = None
        self.wanted: DetectorSpec | None = None
        self.loading: DetectorSpec | None = None
        self.model_name = ""
        self.model_sha256 = ""
        self.model_since_ms = _now_ms()
        self.model_swaps = 0
        self.model_refusals = 0
        self.model_refused: dict[str, Any] | None = None
        self._loaded: queue.SimpleQueue[_Loaded] = queue.SimpleQueue()

    def restore(self, config: DetectorConfig, saved: RemoteUpdate | None) -> Detector:
        """The detector to start with: the announced model if it is here already, else the one that ran
        before the restart; never a fetch before the first frame (the network may be down): a missing
        announced model is fetched once `want_running()` is called."""
        running = DetectorSpec(config)
        model_file = None
        candidates = [saved.model, self.files.last_model()] if saved is not None else []
        for announced in filter(None, candidates):
            path = self.fetcher.path_for(announced.sha256)
            if path.is_file() and sha256_of(path) == announced.sha256:
                try:
                    model_file = self.fetcher.model_file(announced)
                except ModelError as exc:
                    log.warning("saved model %s: %s", announced.sha256[:12], exc)
                    continue
                running = DetectorSpec(config, announced)
                break
        detector = load_detector(config, model_file)
        if model_file is not None and running.model is not None:
            self.model_name, self.model_sha256 = model_file.name, running.model.sha256
        else:
            self.model_name, self.model_sha256 = configured_model(config)
        self.running = running
        self.wanted = DetectorSpec(config, saved.model if saved else None)
        return detector

    def want_running(self) -> None:
        """Start loading the wanted model if it is not the running one (at the daemon's start)."""
        if self.wanted is not None and self.wanted != self.running:
            self._start(self.wanted)

    def want(self, spec: DetectorSpec) -> None:
        self.wanted = spec
        if spec != self.running and spec != self.loading:
            self._start(spec)

    def _start(self, spec: DetectorSpec) -> None:
        if self.loading is not None:
            return  # the wanted spec is loaded when this load is collected
        self.loading = spec
        threading.Thread(target=self._load, args=(spec,), name="model-loader", daemon=True).start()
        self._on_change()

    def _load(self, spec: DetectorSpec) -> None:
        """Loader thread: fetch, verify, build and try the detector; post the outcome."""
        name, sha = configured_model(spec.config)
        try:
            model_file = None
            if spec.model is not None:
                name, sha = spec.model.name or spec.model.sha256[:12], spec.model.sha256
                model_file = self.fetcher.model_file(spec.model)
                name = model_file.name
            detector = load_detector(spec.config, model_file)
        except ModelError as exc:
            self._loaded.put(_Loaded(spec, None, name, sha, str(exc)))
        except Exception as exc:  # noqa: BLE001 - any failure means: keep the running detector
            log.exception("loading model %s failed", sha[:12])
            self._loaded.put(_Loaded(spec, None, name, sha, f"loading failed: {exc}"))
        else:
            self._loaded.put(_Loaded(spec, detector, name, sha))

    def collect(self) -> None:
        """Take what the loader thread posted: swap a wanted detector in, or record a refusal."""
        while True:
            try:
                loaded = self._loaded.get_nowait()
            except queue.Empty:
                return
            self.loading = None
            if loaded.detector is None:
                self.model_refusals += 1
                self.model_refused = {"name": loaded.name, "sha256": loaded.sha256, "reason": loaded.error[:1000],
                                      "ms": _now_ms()}
                log.error("model %s refused, %s kept: %s", loaded.sha256[:12] or loaded.name, self.model_name,
                          loaded.error)
            elif loaded.spec == self.wanted:
                self._swap(loaded.detector)
                self.running = loaded.spec
                self.model_name, self.model_sha256 = loaded.name, loaded.sha256
                self.model_since_ms = _now_ms()
                self.model_swaps += 1
                self.files.save_running_model(loaded.spec.model)
                if self.model_refused is not None and self.model_refused["sha256"] == loaded.sha256:
                    self.model_refused = None
                log.info("detector now runs model %s (%s…)", loaded.name, loaded.sha256[:12])
            self._on_change()
            if self.wanted != self.running and self.wanted != loaded.spec and self.wanted is not None:
                self._start(self.wanted)


__all__ = ["MAX_CONFIG_BYTES", "REMOTE_SECTIONS", "DetectorSpec", "ModelAnnouncement", "ModelFetcher",
           "ModelLoader", "RemoteFiles", "RemoteRefused", "RemoteUpdate", "configured_model", "load_detector",
           "merge_config", "parse_update", "running_model"]
