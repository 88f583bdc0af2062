"""A scripted OpenAI-compatible chat server for tests and demos.

It speaks the real wire protocol (``POST /v1/chat/completions``, ``GET /v1/models``) on 127.0.0.1, answers each
request with the next step of a script (a reply or an injected fault) and records every request body it received.

Usage in tests::

    with ScriptedLLMServer([Fault(status=429, retry_after=1), Reply(content="hi")]) as server:
        client = ChatClient(base_url=server.base_url, model="scripted")
        ...
        assert server.requests[0]["messages"] == [...]

From the command line::

    python -m corecraft_site.llm.scripted_server --port 8901 --script path.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "scripted"


@dataclass(frozen=True)
class ScriptedToolCall:
    """A tool call the scripted assistant makes; ``arguments`` is sent verbatim when a string, else JSON-encoded."""

    name: str
    arguments: str | Mapping[str, Any] = "{}"
    id: str | None = None

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """A successful assistant turn: text and/or tool calls, optional usage, optional extra latency."""

    content: str | None = None
    tool_calls: Sequence[ScriptedToolCall] = ()
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    delay_s: float = 0.0


@dataclass(frozen=True)
class Fault:
    """An injected failure; exactly one of ``status``, ``delay_s``, ``malformed``, ``truncated`` is set.

    ``delay_s`` sleeps before answering 504, so a client with a shorter timeout gives up first.
    """

    status: int | None = None
    retry_after: str | float | None = None
    delay_s: float | None = None
    malformed: bool = False
    truncated: bool = False

    def __post_init__(self) -> None:
        kinds = [self.status is not None, self.delay_s is not None, self.malformed, self.truncated]
        if sum(kinds) != 1:
            raise ValueError("a Fault sets exactly one of status, delay_s, malformed, truncated")
        if self.status is not None and not 400 <= self.status <= 599:
            raise ValueError(f"a Fault status is an HTTP error (400-599), got {self.status}")


Step = Reply | Fault


def step_from_dict(data: Mapping[str, Any]) -> Step:
    """Build a step from its JSON form: ``{"reply": {...}}`` or ``{"fault": {...}}``."""
    if set(data) == {"reply"}:
        reply = dict(data["reply"])
        reply["tool_calls"] = tuple(ScriptedToolCall(**call) for call in reply.get("tool_calls", ()))
        return Reply(**reply)
    if set(data) == {"fault"}:
        return Fault(**data["fault"])
    raise ValueError(f"a step is {{'reply': ...}} or {{'fault': ...}}, got keys {sorted(data)}")


def script_from_json(data: Any) -> list[Step] | dict[str, list[Step]]:
    """Parse a script file's content: a list of steps, or an object mapping model names to lists of steps."""
    if isinstance(data, list):
        return [step_from_dict(step) for step in data]
    if isinstance(data, dict):
        return {model: [step_from_dict(step) for step in steps] for model, steps in data.items()}
    raise ValueError("a script is a list of steps or an object of model name -> list of steps")


def _approx_tokens(value: Any) -> int:
    # Whitespace-separated words stand in for tokens: stable, and good enough for usage accounting tests.
    return len(json.dumps(value).split()) if value is not None else 0


def _completion_body(reply: Reply, *, model: str, request: Mapping[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json()},
            }
            for call in reply.tool_calls
        ]
    finish_reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    prompt_tokens = reply.prompt_tokens if reply.prompt_tokens is not None else _approx_tokens(request.get("messages"))
    completion_tokens = (
        reply.completion_tokens if reply.completion_tokens is not None else _approx_tokens(reply.content)
    )
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": HTTPStatus(status).phrase.lower().replace(" ", "_"), "code": status}}


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: 64 clients connecting at once (a batch of rollouts, each with its
    # endpoint's client) overflowed it, and the dropped handshakes were retried by TCP a second later, which showed
    # as rollouts finishing a second late. Model servers listen with a deep backlog (uvicorn 2048).
    request_queue_size = 1024


class ScriptedLLMServer:
    """A threaded loopback server answering chat completions from a script, usable as a context manager.

    ``script`` is a list of steps consumed in order by every request, or a mapping of model name to its own list,
    so several scripts share one server (a request for an unknown model gets 404). A request past the end of
    its script gets 410, which clients do not retry. ``requests`` holds every chat request body, in arrival order.
    """

    def __init__(self, script: Sequence[Step] | Mapping[str, Sequence[Step]], *, port: int = 0) -> None:
        if isinstance(script, Mapping):
            self._queues: dict[str | None, deque[Step]] = {model: deque(steps) for model, steps in script.items()}
        else:
            self._queues = {None: deque(script)}
        self._port = port
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def models(self) -> list[str]:
        return [model for model in self._queues if model is not None] or [DEFAULT_MODEL]

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in ``/v1``."""
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def remaining(self, model: str | None = None) -> int:
        """How many steps are left in the script (of ``model`` when the script is per model)."""
        with self._lock:
            return len(self._queues[model])

    def start(self) -> ScriptedLLMServer:
        httpd = _Server(("127.0.0.1", self._port), _handler_for(self))
        httpd.daemon_threads = True
        # A handler still sleeping out a delay fault must not hold up shutdown.
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _next_step(self, body: Mapping[str, Any]) -> tuple[Step | None, int, str]:
        """The step for this request, or (None, status, reason) when there is none."""
        with self._lock:
            self.requests.append(dict(body))
            key = body.get("model") if None not in self._queues else None
            queue = self._queues.get(key)
            if queue is None:
                return None, 404, f"model {key!r} is not scripted on this server"
            if not queue:
                return None, 410, "the script is exhausted"
            return queue.popleft(), 200, ""


def _handler_for(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive, as the servers it stands in for (vLLM, SGLang, OpenAI) speak it: every answer has its length.
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall between them

        def log_message(self, format: str, *args: Any) -> None:
            # Test output stays quiet; the recorded requests are the log.
            pass

        def _send(self, status: int, payload: bytes, headers: Mapping[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout) before we answered

        def _send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
            self._send(status, json.dumps(body).encode(), headers)

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                self._send_json(404, _error_body(404, f"no route {self.path}"))
                return
            data = [{"id": model, "object": "model", "created": 0, "owned_by": "scripted"} for model in server.models]
            self._send_json(200, {"object": "list", "data": data})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send_json(404, _error_body(404, f"no route {self.path}"))
                return
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                self._send_json(400, _error_body(400, "the request body is not JSON"))
                return
            if not isinstance(body, dict):
                self._send_json(400, _error_body(400, "the request body is not a JSON object"))
                return
            step, status, reason = server._next_step(body)
            if step is None:
                self._send_json(status, _error_body(status, reason))
            elif isinstance(step, Reply):
                time.sleep(step.delay_s)
                model = str(body.get("model") or DEFAULT_MODEL)
                self._send_json(200, _completion_body(step, model=model, request=body))
            else:
                self._send_fault(step, body)

        def _send_fault(self, fault: Fault, body: Mapping[str, Any]) -> None:
            if fault.delay_s is not None:
                time.sleep(fault.delay_s)
                self._send_json(504, _error_body(504, "scripted delay"))
            elif fault.malformed:
                self._send(200, b"<html>this is not JSON</html>")
            elif fault.truncated:
                whole = json.dumps(_completion_body(Reply(content="cut short"), model=DEFAULT_MODEL, request=body))
                self._send(200, whole[: len(whole) // 2].encode())
            else:
                status = int(fault.status or 500)
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
                self._send_json(status, _error_body(status, f"scripted fault {status}"), headers)

    return Handler


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a script file until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8901)
    parser.add_argument("--script", type=Path, required=True, help="JSON: a list of steps or model -> steps")
    args = parser.parse_args(argv)
    script = script_from_json(json.loads(args.script.read_text()))
    with ScriptedLLMServer(script, port=args.port) as server:
        print(f"scripted OpenAI-compatible server at {server.base_url} (models: {', '.join(server.models)})")
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
