"""Configuration plumbing both sides use: one TOML file per side, validated by a typed schema that refuses
unknown keys and names the key that is wrong. Defaults make every command work without a file; only
secrets come from the environment."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Literal, TypeVar
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

T = TypeVar("T", bound=BaseModel)


class ConfigError(ValueError):
    """A configuration a user wrote that cannot be used; the message names the file and key."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


class TLSConfig(Strict):
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    insecure_skip_verify: bool = False


class MQTTConfig(Strict):
    """How to reach the broker. `url` is mqtt://host:port or mqtts://host:port."""

    url: str = "mqtt://127.0.0.1:1883"
    protocol: Literal["5", "3.1.1"] = "5"
    prefix: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")] = "edgetriage"
    client_id: str | None = None
    username: str | None = None
    password: SecretStr | None = Field(None, description="or EDGETRIAGE_MQTT_PASSWORD")
    keepalive_s: Annotated[int, Field(ge=5, le=3600)] = 30
    session_expiry_s: Annotated[int, Field(ge=0)] = 7 * 86400
    tls: TLSConfig | None = None

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parsed = urlparse(value)
        if parsed.scheme not in ("mqtt", "mqtts", "tcp") or not parsed.hostname:
            raise ValueError("must look like mqtt://HOST:PORT or mqtts://HOST:PORT")
        return value

    @property
    def host(self) -> str:
        return urlparse(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        parsed = urlparse(self.url)
        return parsed.port or (8883 if parsed.scheme == "mqtts" else 1883)

    def secret_password(self) -> str | None:
        return secret("EDGETRIAGE_MQTT_PASSWORD", self.password)


def default_state_dir() -> Path:
    """Where a side keeps its state unless its config says otherwise: $EDGETRIAGE_STATE, else ./var."""
    return Path(os.environ.get("EDGETRIAGE_STATE") or "./var")


def secret(env: str, configured: SecretStr | None) -> str | None:
    """A secret: the environment variable `env` when set and not empty, else the configured value (if any)."""
    return os.environ.get(env) or (configured.get_secret_value() if configured else None)


def _explain(exc: ValidationError, source: str, data: object = None) -> str:
    lines = [f"{source}: invalid configuration"]
    for err in exc.errors():
        key = _key_path(err["loc"], data) or "(top level)"
        msg = (
            "unknown key (check the spelling; see the example config)"
            if err["type"] == "extra_forbidden"
            else err["msg"]
        )
        lines.append(f"  {key}: {msg}")
    return "\n".join(lines)


def _key_path(loc: tuple[int | str, ...], data: object) -> str:
    """Where an error is, as the file names it: `cameras[porch].fps` for the camera whose id is porch (a
    table in a list is named by its `id`, else its `name`, else its position: `overrides[2].min_score`), not
    `cameras.3.fps`, which makes the reader count tables."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            item = data[part] if isinstance(data, list) and 0 <= part < len(data) else None
            name = next((item[k] for k in ("id", "name") if isinstance(item, dict)
                         and isinstance(item.get(k), str) and item[k]), None)
            out += f"[{name if name is not None else part}]"
            data = item
        else:
            out += f".{part}" if out else str(part)
            data = data.get(part) if isinstance(data, dict) else None
    return out


def validate_config(model: type[T], data: dict, source: str = "config") -> T:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, source, data)) from None


def load_config(model: type[T], path: str | Path | None) -> T:
    """Read and validate a TOML file; no path means all defaults."""
    if path is None:
        return validate_config(model, {}, "defaults")
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    return validate_config(model, data, str(path))
