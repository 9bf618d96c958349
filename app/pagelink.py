"""`edgetriage cloud page-link`: a fresh one-time link to the live page, from the running service.

Like `edgetriage ask`, it reaches the API at EDGETRIAGE_API_URL (default http://127.0.0.1:8080) with the
operator's token in EDGETRIAGE_API_TOKEN. The link works once (spent by the sign-in that reaches the page,
not by a load that failed on the way) and for [http] login_ttl_s; no restart needed. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .ask import API_TOKEN_ENV, API_URL_ENV, DEFAULT_URL, call_api


class PageLinkFailed(RuntimeError):
    """No link could be had; the message says why."""


def mint_page_link(url: str, token: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """The API's answer: {"path", "link", "expires_s"}; the link joined to `url` is put in "link"."""
    answer = call_api(url, "/v1/page-link", token, b"", timeout_s, PageLinkFailed, "the link")
    if not isinstance(answer, dict) or not isinstance(answer.get("path"), str):
        raise PageLinkFailed(f"the API at {url} has no page link to give (an older service?)")
    return {**answer, "link": f"{url.rstrip('/')}{answer['path']}"}


def cmd_page_link(args: argparse.Namespace) -> int:
    url = os.environ.get(API_URL_ENV) or DEFAULT_URL
    token = os.environ.get(API_TOKEN_ENV)
    if not token:
        print(f"edgetriage: error: set {API_TOKEN_ENV} to the operator's API token", file=sys.stderr)
        return 2
    try:
        answer = mint_page_link(url, token)
    except PageLinkFailed as exc:
        print(f"edgetriage: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(answer))
    else:
        print(answer["link"])
        minutes = max(1, round(answer.get("expires_s", 0) / 60))
        print(f"(works once, for {minutes} min; it is a credential: do not paste it where others read)",
              file=sys.stderr)
    return 0


def add_parser(csub: Any) -> None:
    cmd = csub.add_parser(
        "page-link", help=f"a fresh one-time link to the live page (${API_URL_ENV}, ${API_TOKEN_ENV})",
        description="Ask the running cloud service for a fresh one-time link to its live page. The link works "
                    "once, spent by the sign-in that reaches the page. Needs the operator's API token "
                    f"(${API_URL_ENV}, default http://127.0.0.1:8080; ${API_TOKEN_ENV}).",
        epilog=f"example:\n  {API_TOKEN_ENV}=... edgetriage cloud page-link",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("--json", action="store_true", help='print {"link", "path", "expires_s"}')
    cmd.set_defaults(func=cmd_page_link)
