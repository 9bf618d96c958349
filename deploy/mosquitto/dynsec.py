#!/usr/bin/env python3
"""Write the Mosquitto dynamic-security file for edgetriage: what each identity may publish, receive and subscribe.

    python3 deploy/mosquitto/dynsec.py OUT.json [--prefix edgetriage] [--password USER=PASSWORD]... DEVICE...

Why not only the plain `acl` file: Mosquitto's acl_file plugin grants every SUBSCRIBE and filters on delivery.
A device that subscribes to the cloud's shared subscription, `$share/<group>/edgetriage/v1/+/events`, joins the
cloud's round-robin and takes its share of every device's events, which the broker then drops because the
device may not read them: they never reach the cloud (until the device re-sends them). The dynamic-security
plugin shipped with Mosquitto 2 checks the subscription itself (`subscribeLiteral`/`subscribePattern`), so
that SUBSCRIBE is refused (SUBACK 0x87) and nothing is taken.

It has no `%u` patterns, so each device gets a role of its own naming its id: it may publish its own events,
status and state, and subscribe to (and receive) its own answers, verdicts and configuration and the cloud's
load report, nothing else. `edgetriage.cloud` (the cloud's certificate CN) may subscribe to every device's
events (also as a shared subscription), verdicts, status and state, and publish verdicts, answers, config,
its load report and Home Assistant's topics. `edgetriage.homeassistant` reads Home Assistant's topics and the
devices' status. Identities that log in by certificate (devices, the cloud) get no password here: the broker
takes their user name from the certificate. `--password USER=PASSWORD` adds a password login (e.g. Home
Assistant's). Add a device later by running this again with every device and password login, then restart the
broker (the file has no admin login, so `mosquitto_ctrl dynsec` cannot change it on a live broker).
Everything not granted is refused (defaultACLAccess all false but unsubscribe).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import sys

CLOUD = "edgetriage.cloud"
HOME_ASSISTANT = "edgetriage.homeassistant"
DEVICE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ITERATIONS = 101  # what mosquitto_ctrl uses


def _acl(kind: str, topic: str) -> dict:
    return {"acltype": kind, "topic": topic, "allow": True}


def _reads(*topics: str) -> list[dict]:
    """Subscribe to (a filter) and receive (what matches it)."""
    return [_acl(k, t) for t in topics for k in ("subscribePattern", "publishClientReceive")]


def _writes(*topics: str) -> list[dict]:
    return [_acl("publishClientSend", t) for t in topics]


def cloud_role(p: str) -> dict:
    events = f"{p}/v1/+/events"
    acls = _reads(events, f"$share/+/{events}", f"{p}/v1/+/verdicts", f"{p}/v1/+/config", f"{p}/v1/_cloud/load",
                  f"{p}/v1/+/status", f"{p}/v1/+/state", "homeassistant/#", f"{p}/ha/#")
    acls += _writes(f"{p}/v1/+/verdicts", f"{p}/v1/+/answers", f"{p}/v1/+/config", f"{p}/v1/_cloud/load",
                    "homeassistant/#", f"{p}/ha/#")
    return {"rolename": "edgetriage-cloud", "acls": acls}


def home_assistant_role(p: str) -> dict:
    acls = _reads("homeassistant/#", f"{p}/ha/#", f"{p}/v1/+/status", f"{p}/v1/_cloud/load")
    return {"rolename": "edgetriage-homeassistant", "acls": acls + _writes("homeassistant/status")}


def device_role(p: str, device: str) -> dict:
    mine = f"{p}/v1/{device}"
    acls = _writes(f"{mine}/events", f"{mine}/status", f"{mine}/state")
    acls += [_acl(k, t) for t in (f"{mine}/answers", f"{mine}/verdicts", f"{mine}/config", f"{p}/v1/_cloud/load")
             for k in ("subscribeLiteral", "publishClientReceive")]
    return {"rolename": f"device-{device}", "acls": acls}


def _client(username: str, role: str, password: str | None = None) -> dict:
    client = {"username": username, "roles": [{"rolename": role}]}
    if password is not None:
        salt = os.urandom(12)
        digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, ITERATIONS)
        client.update(password=base64.b64encode(digest).decode(), salt=base64.b64encode(salt).decode(),
                      iterations=ITERATIONS)
    return client


def settings(devices: list[str], prefix: str = "edgetriage", passwords: dict[str, str] | None = None) -> dict:
    """The dynamic-security document (see the module docstring)."""
    passwords = passwords or {}
    roles = [cloud_role(prefix), home_assistant_role(prefix)] + [device_role(prefix, d) for d in devices]
    clients = [_client(CLOUD, "edgetriage-cloud", passwords.get(CLOUD)),
               _client(HOME_ASSISTANT, "edgetriage-homeassistant", passwords.get(HOME_ASSISTANT))]
    clients += [_client(d, f"device-{d}", passwords.get(d)) for d in devices]
    return {"clients": clients, "groups": [], "roles": roles,
            "defaultACLAccess": {"publishClientSend": False, "publishClientReceive": False, "subscribe": False,
                                 "unsubscribe": True}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the dynamic-security JSON file to write")
    parser.add_argument("devices", nargs="*", help="device ids (each device certificate's CN)")
    parser.add_argument("--prefix", default="edgetriage", help="mqtt.prefix of the fleet")
    parser.add_argument("--password", action="append", default=[], metavar="USER=PASSWORD")
    args = parser.parse_args(argv)
    bad = [d for d in args.devices if not DEVICE_ID.match(d)]
    if bad:
        print(f"dynsec.py: {bad[0]!r} is not a device id (letters, digits, '-' and '_', at most 64)", file=sys.stderr)
        return 2
    passwords = {}
    for item in args.password:
        user, sep, password = item.partition("=")
        if not sep or not user or not password:
            print(f"dynsec.py: --password takes USER=PASSWORD, not {item.split('=')[0]!r}=...", file=sys.stderr)
            return 2
        passwords[user] = password
    with open(os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
        json.dump(settings(args.devices, args.prefix, passwords), out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
