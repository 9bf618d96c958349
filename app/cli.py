"""The `edgetriage` command: one front door, each subcommand importing only the side it needs."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
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


def _setup_logging(verbose: int, json_logs: bool = False) -> None:
    """Warnings by default; -v info, -vv debug for edgetriage's own loggers (libraries stay at warning)."""
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose == 1 else logging.WARNING
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
        from .edge.capture import CaptureError
        from .edge.outbox import OutboxError

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
    from .shared.broker_check import check_broker

    check_broker(load_edge_config(args.config).mqtt, where=_config_source(args))  # before any model loads
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

    config = load_edge_config(args.config)
    print(f"{args.config or 'defaults'}: OK (device {config.device}, {len(config.cameras)} camera(s))")
    print(_mqtt_note(config.mqtt))
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
    check_broker(config.mqtt, where=_config_source(args))  # before the model loads
    asyncio.run(serve(config))
    return 0


def cmd_cloud_push_config(args: argparse.Namespace) -> int:
    from .cloud.config import load_cloud_config
    from .cloud.push import config_message, push_config, read_push_file
    from .shared.config import MQTTConfig, validate_config

    mqtt = load_cloud_config(args.config).mqtt
    if args.broker:
        mqtt = validate_config(MQTTConfig, {**mqtt.model_dump(), "url": args.broker}, "--broker")
    if args.clear:
        version, payload = "", b""
    elif args.file is None:
        raise FileNotFoundError("give the config FILE to push (or --clear)")
    else:
        version, payload = config_message(read_push_file(args.file), version=args.version)
    result = push_config(mqtt, args.device, payload, version=version, wait_s=args.wait)
    what = "cleared" if args.clear else f"version {result.version}"
    if result.outcome == "refused":
        print(f"{args.device}: {what} refused: {result.reason}", file=sys.stderr)
        return 1
    print(f"{args.device}: {what} {result.outcome} ({result.topic})")
    return 0 if result.outcome in ("published", "applied") else 3


def cmd_cloud_check(args: argparse.Namespace) -> int:
    from .cloud.config import load_cloud_config

    config = load_cloud_config(args.config)
    print(f"{args.config or 'defaults'}: OK (broker {config.mqtt.url}, store {config.store_path})")
    print(_mqtt_note(config.mqtt))
    if config.analyzer.policies:
        from .cloud.analysis.gate import PolicyBook

        for line in PolicyBook(config.analyzer.policies).report():
            print(line)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edgetriage", description=__doc__)
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging on stderr (-vv: debug)")
    parser.add_argument("--log-json", action="store_true",
                        help="structured JSON logs on stderr, with event_id/device/camera fields (-vv: per event)")
    parser.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                        help="progress bars on stderr for long steps (auto: only when stderr is a terminal)")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="broker + cloud + edge on a bundled clip, in one process")
    demo.add_argument("--broker", help="use this MQTT broker (mqtt://HOST:PORT) instead of the embedded one")
    demo.add_argument("--protocol", choices=["5", "3.1.1"], help="MQTT protocol (default: 5 external, 3.1.1 embedded)")
    demo.add_argument("--clip", help="video file to run on (default: the bundled one-by-one clip)")
    demo.add_argument("--json", action="store_true", help="last stdout line: one JSON object with the figures")
    demo.add_argument("--offset", type=int, default=3,
                      help="second pass starts this many frames later, so crops are near-duplicates (0: no second pass)")
    demo.add_argument("--max-frames", type=int, default=None, help="stop each pass after this many frames")
    demo.add_argument("--model", help="LLM: a GGUF file or model folder (default: SmolLM2-135M, fetched once)")
    demo.add_argument("--http-port", type=int, default=0, help="serve the cloud API on this port (0: a free one)")
    demo.add_argument("--serve", action="store_true",
                      help="keep the live page up after the summary, until Ctrl-C (prints its one-time URL)")
    demo.add_argument("--no-ha", action="store_true", help="do not announce the demo camera to Home Assistant")
    demo.set_defaults(func=cmd_demo)

    models = sub.add_parser("models", help="model files")
    msub = models.add_subparsers(dest="models_command", required=True)
    fetch = msub.add_parser("fetch", help="download the CPU LLM (SmolLM2-135M) once, check it, prepare it")
    fetch.add_argument("--gguf-only", action="store_true", help="download and verify the GGUF, do not convert")
    fetch.set_defaults(func=cmd_models_fetch)

    edge = sub.add_parser("edge", help="the device agent")
    esub = edge.add_subparsers(dest="edge_command", required=True)
    _run_and_check(esub, "edge", "run the agent until stopped", cmd_edge_run, cmd_edge_check)
    replay = esub.add_parser("replay", help="the vision pipeline and decisions on recorded clips, offline")
    replay.add_argument("videos", nargs="+", metavar="VIDEO", help="video files (mp4, gif, anything OpenCV reads)")
    replay.add_argument("--config", help="edge TOML config (default: built-in defaults)")
    replay.add_argument("--events-out", required=True, metavar="FILE.jsonl",
                        help="write one JSON line per event here ('-': stdout)")
    replay.set_defaults(func=cmd_edge_replay)

    cloud = sub.add_parser("cloud", help="the cloud service")
    csub = cloud.add_subparsers(dest="cloud_command", required=True)
    _run_and_check(csub, "cloud", "run the service until stopped", cmd_cloud_run, cmd_cloud_check)
    push = csub.add_parser("push-config", help="publish a device's remote configuration (retained)")
    push.add_argument("--device", required=True, help="device id")
    push.add_argument("file", nargs="?", help="TOML (or .json) with the sections to change, version, [model]")
    push.add_argument("--config", help="cloud TOML config, for the broker (default: built-in defaults)")
    push.add_argument("--broker", help="MQTT broker URL (mqtt://HOST:PORT), instead of the config's")
    push.add_argument("--version", help="config version (default: FILE's version, else the time of the push)")
    push.add_argument("--wait", type=float, default=0.0, metavar="S",
                      help="wait up to S seconds for the device to report the version applied or refused")
    push.add_argument("--clear", action="store_true", help="remove the remote config: back to the device's file")
    push.set_defaults(func=cmd_cloud_push_config)

    from .ask import add_parser as add_ask_parser

    add_ask_parser(sub)  # edgetriage ask "QUESTION"
    return parser


def _run_and_check(sub: Any, side: str, run_help: str, run: Callable[..., int], check: Callable[..., int]) -> None:
    """`edgetriage <side> run` and `edgetriage <side> check-config`, each with --config."""
    cmd = sub.add_parser("run", help=run_help)
    cmd.add_argument("--config", help=f"{side} TOML config (default: built-in defaults)")
    cmd.set_defaults(func=run)
    cmd = sub.add_parser("check-config", help=f"validate a{'n' if side == 'edge' else ''} {side} config and exit")
    cmd.add_argument("--config", help=f"{side} TOML config")
    cmd.set_defaults(func=check)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.progress == "never" or (args.progress == "auto" and not sys.stderr.isatty()):
        os.environ["TQDM_DISABLE"] = "1"  # read by tqdm when it is first imported, which is later than this
    _setup_logging(args.verbose, args.log_json)
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
