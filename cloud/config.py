"""The cloud side's one configuration schema: broker, store, HTTP API, analyzer back-end, scheduling, the reuse
policy and retention.

Every field has a default that works on one machine, so `edgetriage cloud run` needs no file; unknown keys
are refused (see shared.config.Strict) so a misspelt key is reported instead of silently ignored. Secrets
(API tokens, the LLM server's key) come from the environment, never from this file's defaults.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from ..shared.config import MQTTConfig, Strict, default_state_dir, load_config, secret
from ..shared.ids import CAMERA_ID_RE, DEVICE_ID_RE
from ..shared.protocol import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_SIMILARITY
from .ask.config import AskConfig
from .policyform import RuleForm
from .reuse.config import SiteConfig, check_sites
from .teach.suppress.config import SuppressionsConfig

DeviceId = Annotated[str, Field(pattern=DEVICE_ID_RE.pattern)]
CameraId = Annotated[str, Field(pattern=CAMERA_ID_RE.pattern)]
API_TOKEN_ENV = "EDGETRIAGE_API_TOKEN"


def _default_store_path() -> str:
    return str(default_state_dir() / "cloud.db")


class HTTPConfig(Strict):
    """The HTTP API. Loopback by default; every route but /healthz and /metrics needs the bearer token."""

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=0, le=65535)] = 8080
    enabled: bool = True
    token: SecretStr | None = Field(None, description=f"or {API_TOKEN_ENV}; none: a random one per start "
                                                      "(use the one-time login URL it logs)")
    device_tokens: dict[DeviceId, SecretStr] = Field(
        default_factory=dict, description="per-device tokens: each may only POST events of its own device")
    max_body_bytes: Annotated[int, Field(ge=1024, le=16 << 20)] = 512 * 1024
    ask_from_devices: bool = Field(False, description="device tokens may POST /v1/ask (about their own device "
                                                      "only); off: questions are the operator's (403)")
    ask_per_token: Annotated[int, Field(ge=1, le=64)] = Field(
        2, description="questions in flight per token (the page's session counts as one); one more is a 429")
    login_ttl_s: Annotated[int, Field(ge=10, le=86400)] = 600
    session_ttl_s: Annotated[int, Field(ge=60, le=30 * 86400)] = 12 * 3600
    models_dir: str | None = Field(None, description="extra model files served by GET /v1/models/{sha256}")

    def secret_token(self) -> str | None:
        return secret(API_TOKEN_ENV, self.token)


class ReusePolicy(Strict):
    """Which later events a model verdict may answer without asking the model again.

    scope "camera": only events from the same device and camera; "site": any camera of any device of the same
    site as `sites` lists them (devices no site lists fall back to their camera), by the keys the cloud computes
    from the crop itself, and the verdict is offered to the site's other devices as it is made. max_distance is in
    bits of the 64-bit perceptual hash; min_similarity is the cosine
    similarity of appearance embeddings that also counts as the same (events that carry one); ttl_s bounds how long a
    verdict, and anything reused from it, stays valid. verify_sample: the share of cache hits the model is
    asked about again, to measure how often reuse is wrong.
    """

    scope: Literal["camera", "site"] = "camera"
    max_distance: Annotated[int, Field(ge=0, le=32)] = DEFAULT_MAX_DISTANCE
    min_similarity: Annotated[float, Field(ge=0.5, le=1.0)] = DEFAULT_MIN_SIMILARITY
    ttl_s: Annotated[int, Field(ge=0, le=30 * 86400)] = 3600
    verify_sample: Annotated[float, Field(ge=0.0, le=1.0)] = 0.05
    offer_site: bool = True
    sites: dict[DeviceId, list[DeviceId]] = Field(
        default_factory=dict, description="site -> its devices: the only word on which device is in which site "
                                          "(an event naming another site is refused, cloud.reuse.trust)")


class OpenAIConfig(Strict):
    """[analyzer.openai]: any OpenAI-compatible chat-completions server (vLLM, llama.cpp, transformers serve,
    a hosted API)."""

    base_urls: Annotated[list[str], Field(min_length=1)] = ["http://127.0.0.1:8000/v1"]
    model: Annotated[str, Field(min_length=1, max_length=256)] = "default"
    api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] = "OPENAI_API_KEY"
    balance: Literal["round_robin", "least_loaded"] = "least_loaded"
    max_in_flight: Annotated[int, Field(ge=1, le=1024)] = Field(
        8, description="requests at once per base URL")
    connect_timeout_s: Annotated[float, Field(gt=0, le=120)] = 5.0
    retries: Annotated[int, Field(ge=0, le=10)] = 2
    backoff_s: Annotated[float, Field(ge=0, le=60)] = 0.5
    structured_output: Literal["auto", "response_format", "structured_outputs", "none"] = Field(
        "auto", description="how the verdict's JSON schema is sent: OpenAI response_format, vLLM "
                            "structured_outputs, or not at all; auto: response_format, dropped for a server "
                            "that refuses it")
    vision: bool = Field(False, description="the model sees images: send the crop, not a description of it")
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.0

    @field_validator("base_urls")
    @classmethod
    def _urls(cls, value: list[str]) -> list[str]:
        for url in value:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"{url!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1)")
        return [url.rstrip("/") for url in value]


class VLLMConfig(Strict):
    """[analyzer.vllm]: vLLM in this process (the `gpu` extra). `vllm serve` + the openai back-end is the
    tested way to run vLLM; this one saves the HTTP hop."""

    model: str = "Qwen/Qwen2.5-VL-3B-Instruct"
    vision: bool = True
    max_model_len: Annotated[int, Field(ge=256, le=1 << 20)] = 4096
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.85
    tensor_parallel_size: Annotated[int, Field(ge=1, le=64)] = 1
    temperature: Annotated[float, Field(ge=0, le=2)] = 0.0


class PolicyConfig(Strict):
    """[[analyzer.policies]]: the operator's rule for one place, in words (`text`, compiled into rules when the
    config loads) or in the structured form (`rules` and `otherwise`, docs/operator/policies.md); the rules decide
    and the model judges only what they leave to it. The most specific entry wins: camera and zone, then camera,
    then zone, then one for everywhere. The policy is part of the prompt version, so a verdict is never reused
    across policies."""

    camera: CameraId | None = None
    zone: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    text: Annotated[str, Field(min_length=1, max_length=300)] | None = Field(
        None, description="the policy in words, compiled into rules when the config loads (or give `rules`)")
    rules: list[RuleForm] | None = Field(
        None, description="the policy's structured form, in order, the first rule that holds deciding "
                          "(docs/operator/policies.md); instead of `text`")
    otherwise: Literal["alert", "benign", "model"] | None = Field(
        None, description="with `rules`: the verdict where no rule holds (model: ask the model)")

    @model_validator(mode="after")
    def _words_or_rules(self) -> PolicyConfig:
        if (self.text is None) == (self.rules is None):
            raise ValueError("a policy gives either text (words) or rules (the structured form)")
        if self.rules is not None and self.otherwise is None:
            raise ValueError("a policy with rules says its otherwise: alert, benign or model")
        if self.text is not None and self.otherwise is not None:
            raise ValueError("otherwise goes with rules; in words, say it (\"otherwise ...\")")
        return self

    @property
    def said(self) -> str:
        """The policy as one string: its words, or its rules as JSON (the prompt and the cache version)."""
        if self.text is not None:
            return self.text
        rules = [r.model_dump(exclude_none=True, exclude_defaults=True) for r in self.rules or []]
        return json.dumps({"rules": rules, "otherwise": self.otherwise}, sort_keys=True, separators=(",", ":"))


class BackendConfig(Strict):
    """[[analyzer.backends]]: one of several model back-ends in one cloud (cloud.route.routing chooses between them).
    Keys not given here come from [analyzer] (model_path, threads, device, max_batch, [analyzer.openai], ...)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,32}$")] = Field(
        ..., description="what the verdicts' `model`, the page and /metrics call it")
    kind: Literal["transformers", "openai", "vllm"] = Field(..., description="which back-end (as [analyzer] backend)")
    cost: Literal["small", "large"] = Field(
        ..., description="small: cheap and always at hand (answers when the large one cannot in time); large: the "
                         "one whose answer is final")
    model_path: str | None = Field(None, description="transformers: GGUF file or model folder")
    threads: Annotated[int, Field(ge=1, le=256)] | None = Field(None, description="as [analyzer] threads")
    device: Literal["auto", "cpu", "cuda"] | None = Field(None, description="as [analyzer] device")
    max_batch: Annotated[int, Field(ge=1, le=256)] | None = Field(None, description="as [analyzer] max_batch")
    max_new_tokens: Annotated[int, Field(ge=32, le=1024)] | None = Field(
        None, description="as [analyzer] max_new_tokens")
    timeout_s: Annotated[float, Field(gt=0, le=3600)] | None = Field(None, description="as [analyzer] timeout_s")
    openai: OpenAIConfig | None = Field(None, description="kind openai: the server (as [analyzer.openai])")
    vllm: VLLMConfig | None = Field(None, description="kind vllm: the model (as [analyzer.vllm])")
    latency_ms: Annotated[float, Field(gt=0, le=600_000)] = Field(
        2000.0, description="a batch's time assumed until the back-end has answered one (then measured)")

    @model_validator(mode="after")
    def _settings_of_its_kind(self) -> BackendConfig:
        if self.openai is not None and self.kind != "openai":
            raise ValueError(f"back-end {self.name!r}: [openai] settings go with kind = \"openai\", not {self.kind!r}")
        if self.vllm is not None and self.kind != "vllm":
            raise ValueError(f"back-end {self.name!r}: [vllm] settings go with kind = \"vllm\", not {self.kind!r}")
        return self


class AnalyzerConfig(Strict):
    """[analyzer] in the cloud config: which back-end answers (or several, [[analyzer.backends]], chosen per event
    by load, priority tier and `t_max_ms`: cloud.route.routing), and the settings all back-ends share."""

    backend: Literal["transformers", "openai", "vllm"] = "transformers"
    model_path: str | None = Field(None, description="transformers: GGUF file or model folder; default: "
                                                     "SmolLM2-135M, fetched once")
    threads: Annotated[int, Field(ge=1, le=256)] = 1
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="transformers: where the model runs; auto: CUDA (bf16) when torch sees one, else CPU")
    max_new_tokens: Annotated[int, Field(ge=32, le=1024)] = 96
    max_batch: Annotated[int, Field(ge=1, le=256)] | None = Field(
        None, description="events per model call; default: 8 on a CPU, 16-256 by GPU memory (transformers), "
                          "1 for the openai and vllm back-ends")
    prefix_cache: bool = Field(True, description="transformers: compute each prompt template's fixed start once")
    prompts_dir: str | None = Field(None, description="folder with <label>.txt and default.txt prompt templates")
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60.0
    openai: OpenAIConfig = OpenAIConfig()
    vllm: VLLMConfig = VLLMConfig()
    policies: list[PolicyConfig] = Field(default_factory=list, description="the operator's policy per camera/zone")
    backends: list[BackendConfig] = Field(
        default_factory=list, description="several back-ends side by side (instead of `backend`): a small and a "
                                          "large one, chosen per event (docs/operator/routing.md)")
    t_max_ms: Annotated[float, Field(ge=100, le=600_000)] | None = Field(
        None, description="latency target: an event goes to the large back-end when it can answer within this, "
                          "else to the small one (provisional, asked again on the large one when it has room); "
                          "none: the large one answers every tier not in small_tiers")
    large_tiers: list[Annotated[int, Field(ge=0, le=9)]] = Field(
        default_factory=list, description="priority tiers pinned to the large back-end: they wait for it")
    small_tiers: list[Annotated[int, Field(ge=0, le=9)]] = Field(
        default_factory=list, description="priority tiers for which the small back-end is enough")
    first_answer_ms: Annotated[float, Field(ge=0, le=60_000)] | None = Field(
        None, description="an event the model has not answered within this gets a provisional first answer from "
                          "what needs no model (0: none, the model's verdict is the only one); default: 800 with "
                          "[[analyzer.backends]], none with one back-end")

    @model_validator(mode="after")
    def _one_or_several(self) -> AnalyzerConfig:
        if not self.backends:
            if self.large_tiers or self.small_tiers:
                raise ValueError("large_tiers and small_tiers choose between [[analyzer.backends]]; with one "
                                 "back-end there is nothing to choose")
            return self
        if "backend" in self.model_fields_set:
            raise ValueError("give either backend (one back-end) or [[analyzer.backends]] (several), not both")
        names = [b.name for b in self.backends]
        if len(set(names)) != len(names):
            raise ValueError(f"[[analyzer.backends]] names must differ: {', '.join(names)}")
        both = sorted(set(self.large_tiers) & set(self.small_tiers))
        if both:
            raise ValueError(f"tier {both[0]} is in both large_tiers and small_tiers; say one")
        costs = {b.cost for b in self.backends}
        if self.large_tiers and "large" not in costs:
            raise ValueError("large_tiers pins tiers to the large back-end, but no [[analyzer.backends]] has "
                             "cost = \"large\"")
        if self.small_tiers and "small" not in costs:
            raise ValueError("small_tiers sends tiers to the small back-end, but no [[analyzer.backends]] has "
                             "cost = \"small\"")
        return self

    def for_backend(self, backend: BackendConfig) -> AnalyzerConfig:
        """This analyzer's settings for one of its [[analyzer.backends]] (its own keys over the shared ones)."""
        own = backend.model_dump(exclude={"name", "kind", "cost", "latency_ms"}, exclude_none=True)
        shared = self.model_dump(exclude={"backends", "large_tiers", "small_tiers"})
        shared.update(own, backend=backend.kind)
        if backend.openai is not None:
            shared["openai"] = backend.openai
        if backend.vllm is not None:
            shared["vllm"] = backend.vllm
        return AnalyzerConfig.model_validate(shared)


class PriorityRule(Strict):
    """Events matching every given key go to `tier` (0 is served first). The first matching rule wins."""

    tier: Annotated[int, Field(ge=0, le=9)]
    device: DeviceId | None = None
    camera: CameraId | None = None
    label: str | None = None


class TokenBudgetConfig(Strict):
    """[scheduler.budget]: model tokens (prompt + answer) per rolling hour. None: unlimited. When a budget is
    spent, an event the cache cannot answer gets verdict "unknown" saying which budget and when it refills;
    cache hits go on."""

    device_tokens_per_hour: Annotated[int, Field(ge=0)] | None = None
    fleet_tokens_per_hour: Annotated[int, Field(ge=0)] | None = None
    devices: dict[DeviceId, Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict, description="per-device overrides of device_tokens_per_hour")
    estimate_tokens: Annotated[int, Field(ge=1, le=1 << 20)] = Field(
        400, description="what an analysis is assumed to cost until the back-end reports its usage")


class SchedulerConfig(Strict):
    """[scheduler]: the bounded queue in front of the analyzer."""

    queue_size: Annotated[int, Field(ge=1, le=1 << 20)] = 256
    concurrency: Annotated[int, Field(ge=1, le=1024)] | None = Field(
        None, description="batches in flight at once; default: what the back-end says it takes")
    batch_wait_ms: Annotated[float, Field(ge=0, le=10_000)] = 10.0
    deadline_s: Annotated[float, Field(gt=0, le=3600)] = 120.0
    default_tier: Annotated[int, Field(ge=0, le=9)] = 5
    priorities: list[PriorityRule] = Field(default_factory=list)
    budget: TokenBudgetConfig = TokenBudgetConfig()
    overload_depth: Annotated[int, Field(ge=1)] | None = Field(None, description="default: half the queue")
    clear_depth: Annotated[int, Field(ge=0)] | None = Field(None, description="default: a quarter of overload_depth")
    load_refresh_s: Annotated[float, Field(ge=0.5, le=3600)] = 5.0
    capacity_report_s: Annotated[float, Field(ge=0, le=86400)] = Field(
        30.0, description="how often the load report is sent again with changed capacity figures while not "
                          "overloaded (0: only when overload starts or ends)")

    @model_validator(mode="after")
    def _depths(self) -> SchedulerConfig:
        over = self.overload_depth if self.overload_depth is not None else max(1, self.queue_size // 2)
        clear = self.clear_depth if self.clear_depth is not None else over // 4
        if clear >= over:
            raise ValueError(f"clear_depth ({clear}) must be below overload_depth ({over})")
        self.overload_depth = over
        self.clear_depth = clear
        return self


class RetentionConfig(Strict):
    """How long received data is kept: crops (the only image data that ever leaves a device) first, then the
    events and verdicts. 0 keeps forever."""

    crops_days: Annotated[float, Field(ge=0)] = 7.0
    events_days: Annotated[float, Field(ge=0)] = 30.0
    crop_quota_mb: Annotated[float, Field(ge=0, le=1 << 20)] = Field(
        1024.0, description="crops kept per device within crops_days, in MiB; past it an event is answered but "
                            "its crop not stored (0: no quota)")
    sweep_interval_s: Annotated[float, Field(ge=1, le=86400)] = 3600.0

    @model_validator(mode="after")
    def _order(self) -> RetentionConfig:
        if self.events_days and self.crops_days and self.crops_days > self.events_days:
            raise ValueError("crops_days must not exceed events_days (crops are deleted first)")
        return self


class DeliveryConfig(Strict):
    """[delivery]: how events are taken from the broker and shared between service processes.

    With MQTT 5 an event is acknowledged to the broker only once its verdict, or a claim on it with a lease of
    `claim_lease_s`, is stored; a process that dies leaves its claims to run out, and any process then takes
    the events over from the store. `receive_maximum` caps the unacknowledged events the broker sends one
    process at a time. `shared`: join the MQTT 5 shared subscription `$share/<group>/<prefix>/v1/+/events`
    so several processes split the events; they then need `redis_url` (verdicts, seen ids and claims in one
    Redis) and each its own stable `mqtt.client_id`.

    A store or broker error is retried a few times (seconds); then the message is released: the connection
    is made again once the store answers, and the broker sends every unacknowledged message again.
    `stalled_after_s`: messages received but none answered for this long make /healthz answer 503.
    `max_clock_skew_s`: how far ahead of the cloud's clock an event's `captured_ms` may be; one older than
    `retention.events_days` (or further ahead) is refused at intake."""

    receive_maximum: Annotated[int, Field(ge=1, le=65535)] = 32
    claim_lease_s: Annotated[float, Field(ge=1.0, le=3600.0)] = 30.0
    stalled_after_s: Annotated[float, Field(ge=1.0, le=86400.0)] = 180.0
    max_clock_skew_s: Annotated[float, Field(ge=0.0, le=7 * 86400.0)] = 600.0
    shared: bool = False
    redis_url: str | None = Field(None, description="redis://HOST:PORT/DB; password in the URL or "
                                                    "EDGETRIAGE_REDIS_PASSWORD")
    redis_prefix: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")] = "edgetriage"
    max_devices: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        10_000, description="device ids the cloud takes events from (those in [reuse] sites and [http] "
                            "device_tokens, then the first it sees); an event of one more is refused")

    @model_validator(mode="after")
    def _shared_needs_redis(self) -> DeliveryConfig:
        if self.shared and not self.redis_url:
            raise ValueError("shared = true needs redis_url: the processes on one shared subscription keep "
                             "verdicts, seen ids and claims in one Redis")
        return self


class HomeAssistantConfig(Strict):
    """[homeassistant] in the cloud config."""

    enabled: bool = True
    discovery_prefix: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")] = "homeassistant"
    # seconds after an alert verdict until the alert sensor turns off by itself; 0: on until the next verdict
    alert_off_delay_s: Annotated[int, Field(ge=0, le=86400)] = 60
    thumbnails: bool = True  # publish each camera's latest crop for the image entity
class ThresholdsConfig(Strict):
    """[thresholds]: per-camera score floors proposed from the verdict history (cloud.teach.thresholds). Nothing changes
    on a device unless an operator accepts a proposal, or `auto` is on: then every `interval_s` a proposal that
    misses nobody and stays at or under `max_min_score` is pushed by itself."""

    auto: bool = False
    max_min_score: Annotated[float, Field(ge=0.0, le=1.0)] = 0.4
    margin: Annotated[float, Field(ge=0.0, le=0.5)] = 0.05  # a floor stays this far under every wanted score
    min_avoided: Annotated[int, Field(ge=1)] = 3  # escalations a floor must avoid to be worth proposing
    interval_s: Annotated[float, Field(ge=1.0, le=7 * 86400.0)] = 3600.0
    history_days: Annotated[float, Field(gt=0.0, le=365.0)] = 7.0  # the verdicts a proposal reads
    band: tuple[Annotated[float, Field(ge=0.0, le=1.0)], Annotated[float, Field(ge=0.0, le=1.0)]] = (0.2, 0.5)


class CloudConfig(Strict):
    mqtt: MQTTConfig = MQTTConfig()
    store_path: str = Field(default_factory=_default_store_path, description="SQLite file; its folder is created")
    http: HTTPConfig = HTTPConfig()
    analyzer: AnalyzerConfig = AnalyzerConfig()
    scheduler: SchedulerConfig = SchedulerConfig()
    reuse: ReusePolicy = ReusePolicy()
    retention: RetentionConfig = RetentionConfig()
    group: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")] = "edgetriage"  # MQTT 5 shared subscriptions
    drain_timeout_s: Annotated[float, Field(ge=0.0, le=600.0)] = 10.0
    delivery: DeliveryConfig = DeliveryConfig()
    homeassistant: HomeAssistantConfig = HomeAssistantConfig()
    ask: AskConfig = AskConfig()
    suppressions: SuppressionsConfig = SuppressionsConfig()
    thresholds: ThresholdsConfig = ThresholdsConfig()
    sites: list[SiteConfig] = Field(default_factory=list, description="[[sites]]: each site's time zone and each "
                                    "device's cameras, the one place the cloud reads them (cloud.reuse.sites)")

    @model_validator(mode="after")
    def _one_site_table(self) -> CloudConfig:
        """[[sites]] fills [ask] timezones and cameras; the same thing said otherwise there is refused."""
        check_sites(self.sites)
        for site in self.sites:
            for device, cameras in site.cameras.items():
                zone = self.ask.timezones.setdefault(device, site.timezone)
                named = self.ask.cameras.setdefault(device, list(cameras))
                if zone != site.timezone or sorted(named) != sorted(cameras):
                    what = "a time zone" if zone != site.timezone else "cameras"
                    raise ValueError(f"ask: device {device!r} is given {what} that [[sites]] {site.name!r} says "
                                     "otherwise; say it once, in [[sites]]")
        return self

    @model_validator(mode="after")
    def _shared_subscription(self) -> CloudConfig:
        if self.delivery.shared and self.mqtt.protocol != "5":
            raise ValueError("delivery.shared needs mqtt.protocol = \"5\" (shared subscriptions are MQTT 5)")
        if self.delivery.shared and not self.mqtt.client_id:
            raise ValueError("delivery.shared needs mqtt.client_id: give each service process its own, stable "
                             "across restarts, so a restarted process gets back the events its session held")
        return self


def load_cloud_config(path: str | Path | None) -> CloudConfig:
    """The cloud config from a TOML file (None: all defaults); ConfigError names the file and the key."""
    return load_config(CloudConfig, path)
