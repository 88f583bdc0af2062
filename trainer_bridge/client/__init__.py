"""A typed HTTP client for the Corecraft export and trainer-time APIs, for training jobs. No Django, no third-party
packages: the standard library only (``urllib``), so any trainer process can import it.

    client = CorecraftClient("http://127.0.0.1:8000", token="cc_...")
    for row in client.rows("my-release", split="train"):
        opened = client.create_episode(release="my-release", row_id=row.row_id)
        client.call_tool(opened.episode_id, "search_orders", {"customer_id": "cus-00001"})
        outcome = client.finish(opened.episode_id, final_answer="...")
        outcome.reward, outcome.passed, outcome.verdicts

Every API error raises an ``ApiError`` subclass that carries the API's error body (``code``, ``message``,
``fields``). Connection errors and 5xx answers are retried with exponential backoff and jitter; a tool call is
retried only when the server cannot have run it (the connection was refused, or a 502/503/504 from a proxy),
because running a write twice would change the episode. Finishing is idempotent on the server, so it retries.

The package: this module (the client), ``errors`` (``ApiError`` and its kinds) and ``results`` (the typed results).
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainer_bridge.client.errors import (
    ApiError,
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    ServerError,
    TransportError,
    ValidationError,
    api_error,
)
from trainer_bridge.client.options import reward_options_from_env
from trainer_bridge.client.results import (
    BatchResult,
    EpisodeOpened,
    ExportFile,
    Manifest,
    ReleaseRowData,
    ReleaseSummary,
    Reward,
    ToolOutcome,
    Verdict,
)
from trainer_bridge.client.tool_sets import ToolSets, jsonl_tools_path, read_jsonl, tools_digest

__all__ = [
    "ApiError",
    "AuthenticationError",
    "BatchResult",
    "ConflictError",
    "CorecraftClient",
    "EpisodeOpened",
    "ExportFile",
    "Manifest",
    "NotFoundError",
    "PermissionDeniedError",
    "ReleaseRowData",
    "ReleaseSummary",
    "Reward",
    "ServerError",
    "ToolOutcome",
    "TransportError",
    "ValidationError",
    "Verdict",
    "read_jsonl",
    "reward_options_from_env",
]

API_PREFIX = "/api/v1"
RETRY_STATUSES = frozenset({500, 502, 503, 504, 429})
UNSENT_RETRY_STATUSES = frozenset({502, 503, 504, 429})


class CorecraftClient:
    """The Corecraft API for a training job. ``base_url`` is the server's root (``http://host:8000``)."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        reward_options: dict | None = None,
    ) -> None:
        base_url = base_url or os.environ.get("CORECRAFT_API_URL", "")
        if not base_url:
            raise ValueError("base_url is required (or set CORECRAFT_API_URL)")
        if urllib.parse.urlsplit(base_url).scheme not in ("http", "https"):
            raise ValueError(f"base_url must be an http(s) URL, not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.token = token if token is not None else os.environ.get("CORECRAFT_API_TOKEN", "")
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        # Sent with every finish and batch unless a call gives its own: {"rubric_dropout": 0.3, "seed": 7}.
        self.reward_options = reward_options if reward_options is not None else reward_options_from_env()
        # Tool schemas by their tools_sha256: an open names the newest it holds, and the server leaves them out of
        # its answer when they are the row's (40 KB per open otherwise); rows name theirs by it and are given them
        # back from here (fetched once per digest). A release's rows mostly share one set.
        self._tools = ToolSets()

    @classmethod
    def from_env(cls, **kwargs: Any) -> CorecraftClient:
        """A client from ``CORECRAFT_API_URL`` and ``CORECRAFT_API_TOKEN``."""
        return cls(os.environ.get("CORECRAFT_API_URL"), os.environ.get("CORECRAFT_API_TOKEN"), **kwargs)

    # -- transport ----------------------------------------------------------------------------------------------

    def _url(self, path: str, query: dict | None = None) -> str:
        if path.startswith(("http://", "https://")):
            url = path  # a `next` link of a page the server gave us
        else:
            url = self.base_url + (path if path.startswith("/") else f"{API_PREFIX}/{path}")
        if query:
            clean = {k: v for k, v in query.items() if v is not None}
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(clean)
        return url

    def _headers(self, extra: dict | None = None) -> dict:
        headers = {"Accept": "application/json", "User-Agent": "corecraft-trainer-bridge/0.1"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        headers.update(extra or {})
        return headers

    def _sleep(self, attempt: int, retry_after: str | None = None) -> None:
        if retry_after and retry_after.isdigit():
            delay = min(float(retry_after), self.max_backoff)
        else:
            delay = min(self.backoff * (2**attempt), self.max_backoff)
            delay *= 0.5 + random.random() / 2  # jitter: a GRPO group's retries should not land together
        time.sleep(delay)

    def _open(self, method: str, url: str, *, body: Any = None, headers: dict | None = None, unsafe: bool = False):
        """Send one request with retries; returns the open response (caller closes). Raises ApiError/TransportError.

        ``unsafe``: the request must not run twice, so it is retried only when the server cannot have run it.
        """
        data = None if body is None else json.dumps(body).encode("utf-8")
        all_headers = self._headers(headers)
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(url, data=data, method=method, headers=all_headers)  # noqa: S310
            try:
                return urllib.request.urlopen(request, timeout=self.timeout)  # noqa: S310 (the URL is ours)
            except urllib.error.HTTPError as exc:
                if exc.code == 304:
                    return exc
                raw = exc.read()
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                exc.close()
                error = api_error(exc.code, raw)
                retryable = exc.code in (UNSENT_RETRY_STATUSES if unsafe else RETRY_STATUSES)
                if not retryable or attempt == self.retries:
                    raise error from None
                last = error
                self._sleep(attempt, retry_after)
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                reason = getattr(exc, "reason", exc)
                refused = isinstance(reason, ConnectionRefusedError | socket.gaierror)
                if (unsafe and not refused) or attempt == self.retries:
                    raise TransportError(f"{method} {url}: {reason}") from exc
                last = exc
                self._sleep(attempt)
        raise TransportError(f"{method} {url}: {last}")  # pragma: no cover (the loop returns or raises)

    def _json(self, method: str, path: str, *, body: Any = None, query: dict | None = None, unsafe: bool = False):
        response = self._open(method, self._url(path, query), body=body, unsafe=unsafe)
        with response:
            raw = response.read()
        try:
            return json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError) as exc:
            raise TransportError(f"{method} {path}: the answer is not JSON: {raw[:200]!r}") from exc

    # -- releases and rows --------------------------------------------------------------------------------------

    def releases(self) -> list[ReleaseSummary]:
        """Every release the token may see (following pages)."""
        return [ReleaseSummary.from_api(item) for item in self._paged("releases/")]

    def manifest(self, release: str) -> Manifest:
        data = self._json("GET", f"releases/{_segment(release)}/")
        for digest, tools in (data.get("tool_sets") or {}).items():
            if digest not in self._tools:
                self._tools.put(digest, tools)
        return Manifest.from_api(data)

    def tool_set(self, release: str, tools_sha256: str) -> list[dict]:
        """The tool schemas a row's ``tools_sha256`` names: held by digest, fetched (and checked) once."""
        tools = self._tools.get(tools_sha256)
        if tools is None:
            data = self._json("GET", f"releases/{_segment(release)}/tools/{_segment(tools_sha256)}")
            if tools_digest(data["tools"]) != tools_sha256:
                raise TransportError(f"the tools served for {tools_sha256} do not hash to it")
            tools = self._tools.put(tools_sha256, data["tools"])
        return tools

    def _with_tools(self, item: dict, release: str) -> dict:
        if "tools" in item or not item.get("tools_sha256"):
            return item
        return {**item, "tools": self.tool_set(item.get("release") or release, item["tools_sha256"])}

    def rows(self, release: str, *, split: str = "train", page_size: int | None = None) -> Iterator[ReleaseRowData]:
        """The split's rows, page by page (paginated JSON); lazy, so a long split is never held in memory. Each
        row's ``tools`` are resolved from its ``tools_sha256`` (fetched once per digest)."""
        for item in self._paged(f"releases/{_segment(release)}/rows/", {"split": split, "limit": page_size}):
            yield ReleaseRowData.from_api(self._with_tools(item, release), release=release)

    def stream_rows(self, release: str, *, split: str = "train") -> Iterator[dict]:
        """The split's rows from the streamed JSONL endpoint, one dict per line as they arrive, with ``tools``."""
        url = self._url(f"releases/{_segment(release)}/rows.jsonl", {"split": split})
        response = self._open("GET", url, headers={"Accept": "application/x-ndjson, application/jsonl, */*"})
        with response:
            for line in response:
                line = line.strip()
                if line:
                    yield self._with_tools(json.loads(line), release)

    def _paged(self, path: str, query: dict | None = None) -> Iterator[dict]:
        """Items of a paginated list: follows ``next`` links (absolute or relative), or ``page`` numbers."""
        page = 1
        url: str | None = self._url(path, query)
        seen: set[str] = set()
        while url and url not in seen:
            seen.add(url)
            response = self._open("GET", url)
            with response:
                body = json.loads(response.read().decode("utf-8"))
            if isinstance(body, list):
                yield from body
                return
            items = body.get("results", body.get("items", body.get("rows", [])))
            yield from items
            if body.get("next"):
                url = urllib.parse.urljoin(url, body["next"])
            elif body.get("has_more") and items:
                page += 1
                url = self._url(path, {**(query or {}), "page": page})
            else:
                url = None

    def download_export(
        self,
        release: str,
        fmt: str,
        *,
        split: str = "train",
        dest: str | Path,
        poll_interval: float = 2.0,
        wait_timeout: float = 600.0,
    ) -> ExportFile:
        """Download an export (``jsonl`` | ``jsonl-inline`` | ``verl-parquet`` | ``hf``) to ``dest``, waiting for the
        background job.

        A 202 means the file is being made: poll until it is ready. A copy already on disk with a ``.etag``
        sidecar is revalidated with ``If-None-Match`` and kept on 304. A ``jsonl`` file's lines name their tool
        schemas by digest: its tools file is saved beside it (``jsonl_tools_path(dest)``), and ``read_jsonl(dest)``
        gives the rows back with their ``tools``.
        """
        dest = Path(dest)
        etag_file = dest.with_name(dest.name + ".etag")
        headers = {"Accept": "*/*"}
        if dest.exists() and etag_file.exists():
            headers["If-None-Match"] = etag_file.read_text().strip()
        url = self._url(f"releases/{_segment(release)}/exports/{_segment(fmt)}", {"split": split})
        deadline = time.monotonic() + wait_timeout
        while True:
            response = self._open("GET", url, headers=headers)
            status = getattr(response, "status", None) or response.getcode()
            if status == 304:
                response.close()
                tools_path = self._save_tools_file(response.headers.get("Tools-Url"), dest, keep=True)
                return ExportFile(dest, headers["If-None-Match"], downloaded=False, tools_path=tools_path)
            if status == 202:
                with response:
                    body = json.loads(response.read().decode("utf-8") or "{}")
                if time.monotonic() > deadline:
                    raise TransportError(f"export {release}/{fmt}/{split} not ready after {wait_timeout:.0f}s: {body}")
                time.sleep(poll_interval)
                continue
            etag = response.headers.get("ETag", "")
            dest.parent.mkdir(parents=True, exist_ok=True)
            partial = dest.with_name(dest.name + ".part")
            with response, partial.open("wb") as out:
                while chunk := response.read(1 << 20):
                    out.write(chunk)
            tools_path = self._save_tools_file(response.headers.get("Tools-Url"), dest, keep=False)
            partial.replace(dest)
            if etag:
                etag_file.write_text(etag)
            return ExportFile(dest, etag, downloaded=True, tools_path=tools_path)

    def _save_tools_file(self, url: str | None, dest: Path, *, keep: bool) -> Path | None:
        """A jsonl export's tools file (named by its ``Tools-Url``), saved beside ``dest``; kept if ``keep``."""
        if not url:
            return None
        path = jsonl_tools_path(dest)
        if keep and path.exists():
            return path
        with self._open("GET", self._url(url), headers={"Accept": "application/json"}) as response:
            raw = response.read()
        partial = path.with_name(path.name + ".part")
        partial.write_bytes(raw)
        partial.replace(path)
        return path

    # -- episodes and rewards -----------------------------------------------------------------------------------

    def create_episode(self, *, release: str, row_id: int) -> EpisodeOpened:
        """Open an episode (a private world) for a release row; one per rollout."""
        body: dict[str, Any] = {"release": release, "row_id": int(row_id)}
        if self._tools.newest:
            body["tools_sha256"] = self._tools.newest
        data = self._json("POST", "rollouts/episodes/", body=body)
        digest = data.get("tools_sha256") or ""
        if "tools" in data:
            if digest:
                self._tools.put(digest, data["tools"])
        elif digest in self._tools:
            data = {**data, "tools": self._tools.get(digest)}
        else:  # the server left out schemas this client does not hold: never, unless the answer was not for us
            raise TransportError(f"the open answered without tool schemas, and none are held for {digest!r}")
        return EpisodeOpened.from_api(data)

    def call_tool(self, episode_id: str, name: str, arguments: dict | None = None) -> ToolOutcome:
        """Run a tool in the episode; a refusal comes back as ``is_error`` (not an exception): the agent reads it."""
        path = f"rollouts/episodes/{_segment(episode_id)}/tools/{_segment(name)}/"
        data = self._json("POST", path, body={"arguments": {} if arguments is None else arguments}, unsafe=True)
        return ToolOutcome.from_api(data)

    def finish(
        self,
        episode_id: str,
        *,
        final_answer: str,
        messages: list[dict] | None = None,
        reward_options: dict | None = None,
    ) -> Reward:
        """Judge the episode with the final answer; safe to retry (the server returns the first judgement).

        ``reward_options`` (default: the client's): ``{"rubric_dropout": share, "seed": int}``, see the README.
        """
        body: dict[str, Any] = {"final_answer": final_answer}
        if messages is not None:
            body["messages"] = messages
        options = reward_options if reward_options is not None else self.reward_options
        if options:
            body["reward_options"] = options
        return Reward.from_api(self._json("POST", f"rollouts/episodes/{_segment(episode_id)}/finish/", body=body))

    def episode(self, episode_id: str) -> Reward:
        """An episode's status and, once finished, its judgement."""
        return Reward.from_api(self._json("GET", f"rollouts/episodes/{_segment(episode_id)}/"))

    def batch_rewards(self, items: list[dict], *, reward_options: dict | None = None) -> list[BatchResult]:
        """Score a GRPO group in one call: ``items`` are ``{episode_id, final_answer, messages?, reward_options?}``.

        Results come back in order; a failed item has ``ok=False`` and its ``error``, the others their reward.
        ``reward_options`` (default: the client's) apply to every item that does not carry its own.
        """
        body: dict[str, Any] = {"items": items}
        options = reward_options if reward_options is not None else self.reward_options
        if options:
            body["reward_options"] = options
        data = self._json("POST", "rewards/batch/", body=body)
        return [BatchResult.from_api(item) for item in data["results"]]


def _segment(value: Any) -> str:
    return urllib.parse.quote(str(value), safe="")
