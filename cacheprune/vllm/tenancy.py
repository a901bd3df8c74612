"""`TenancyMiddleware`: the tenant set by the server, not by the client.

An ASGI middleware for vLLM's OpenAI server
(`--middleware cacheprune.vllm.tenancy.TenancyMiddleware`; vLLM adds it with
`app.add_middleware`). For every request it:
- maps the `Authorization: Bearer <key>` API key to a tenant (`tenancy_config`; no or an
  unknown key: 401);
- serves `/v1/completions` and `/v1/chat/completions` (streamed or not) with the tenant's
  `cache_salt` set in the body, refusing (400) a body that sets `cache_salt` or
  `kv_transfer_params` itself; `/v1/models` is passed through; other API paths are refused
  (403: nothing the front does not salt reaches vLLM's cache); `/health`, `/ping`,
  `/version`, `/load` and `/metrics` stay open, as with vLLM's own `--api-key`;
- adds the response header `x-cacheprune-pooled-tokens`: the prompt tokens the shared pool
  served this request (`tenancy_reuse`);
- runs the leak monitor on the answer (`tenancy_watch`) before the response ends;
- watches each tenant's prompts for probing (`cacheprune.monitor.probe`: many near-identical
  prompts in a short time): a flagged tenant raises `cacheprune_probe_flags` and a
  `probe_suspected` audit event, and with the connector's `probe_cooldown_s` set its requests
  are computed without the pool for that long (the front sets `kv_transfer_params`).

A missing or malformed tenants file, or a missing pool key, fails the server's start-up (the
ASGI lifespan reports the failure with the reason, and vLLM's server exits).
"""

from __future__ import annotations

import asyncio
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cacheprune.vllm.settings import ISOLATE_KEY
from cacheprune.vllm.tenancy_config import Tenancy, TenancyConfigError
from cacheprune.vllm.tenancy_reuse import new_front_id
from cacheprune.vllm.tenancy_startup import FrontServices, open_front
from cacheprune.vllm.tenancy_watch import answer_texts, prompt_texts

logger = logging.getLogger(__name__)

POOLED_TOKENS_HEADER = "x-cacheprune-pooled-tokens"
GENERATION_PATHS = frozenset({"/v1/completions", "/v1/chat/completions"})
AUTHENTICATED_PATHS = frozenset({"/v1/models"})
OPEN_PATHS = ("/health", "/ping", "/version", "/load", "/metrics")
CLIENT_SET_FIELDS = ("cache_salt", "kv_transfer_params")  # the server's to set, never a client's
MAX_BODY_BYTES = 32 << 20


class TenancyMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._tenancy: Tenancy | None = None
        self._config_error: str | None = None
        try:
            self._tenancy = Tenancy.from_environment()
        except TenancyConfigError as error:
            # NOTE: raised at the lifespan's start-up, where the server can report it and
            # stop; an exception here would be taken by uvicorn for "no lifespan support".
            self._config_error = str(error)
        self._front: FrontServices | None = None
        # NOTE: one thread: detection (spaCy's NER) runs off the event loop, one call at a time.
        self._detection = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cp-front")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        else:  # websockets (vLLM's realtime audio): not salted, so not served
            await receive()
            await send({"type": "websocket.close", "code": 1008})

    # ---- start-up ------------------------------------------------------------------------

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        startup = await receive()
        try:
            if self._config_error is not None:
                raise TenancyConfigError(self._config_error)
            self._front = await asyncio.get_running_loop().run_in_executor(
                self._detection, open_front, scope["app"].state.args)
        except Exception as error:  # noqa: BLE001 - any failure: refuse to serve, say why
            message = f"cacheprune tenancy front cannot start: {error}"
            logger.error(message)
            await send({"type": "lifespan.startup.failed", "message": message})
            return
        replayed = False

        async def startup_then_rest() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return startup
            return await receive()

        await self.app(scope, startup_then_rest, send)

    # ---- requests ------------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"].removeprefix(scope.get("root_path", ""))
        if path.startswith(OPEN_PATHS) or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        if self._tenancy is None or self._front is None:
            await _error(scope, receive, send, 503, "the tenancy front is not started")
            return
        tenant = self._tenancy.tenant(_bearer(Headers(scope=scope)))
        if tenant is None:
            await _error(scope, receive, send, 401, "a valid API key is required "
                         "(Authorization: Bearer <key>)", "authentication_error")
            return
        if path in AUTHENTICATED_PATHS:
            await self.app(scope, receive, send)
        elif path in GENERATION_PATHS and scope.get("method") == "POST":
            await self._generate(scope, receive, send, tenant)
        else:
            await _error(scope, receive, send, 403, f"{path} is not served through the "
                         "tenancy front", "permission_error")

    async def _generate(self, scope: Scope, receive: Receive, send: Send,
                        tenant: str) -> None:
        assert self._tenancy is not None and self._front is not None
        raw = await _read_body(receive)
        if raw is None:
            await _error(scope, receive, send, 413, f"the body is over {MAX_BODY_BYTES} bytes")
            return
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict):
            await _error(scope, receive, send, 400, "the body must be a JSON object")
            return
        for field in CLIENT_SET_FIELDS:
            if field in body:
                await _error(scope, receive, send, 400, f"'{field}' is set by the server from "
                             "your API key; remove it from the request", param=field)
                return
        body["cache_salt"] = self._tenancy.salt(tenant)
        front_id = new_front_id()
        texts = prompt_texts(body)
        if self._front.probes.observe(tenant, self._front.watch.prompt_token_ids(texts),
                                      f"front-{front_id}"):
            body["kv_transfer_params"] = {ISOLATE_KEY: True}  # a suspected prober: no pool
        loop = asyncio.get_running_loop()
        remembered = loop.run_in_executor(self._detection, self._front.watch.remember, tenant,
                                          texts)
        forwarded = json.dumps(body).encode()
        reply = _Reply(self._front, tenant, front_id, bool(body.get("stream")), remembered,
                       send)
        await self.app(_with_headers(scope, forwarded, front_id), _replay(forwarded, receive),
                       reply.send)


class _Reply:
    """Wraps `send`: holds the response's start until its first body chunk (by then the
    prompt was prefilled, so the request log has its pooled tokens), adds the header, and
    checks the answer before the last chunk goes out."""

    def __init__(self, front: FrontServices, tenant: str, front_id: str, streamed: bool,
                 remembered: asyncio.Future[None], send: Send) -> None:
        self._front = front
        self._tenant = tenant
        self._front_id = front_id
        self._streamed = streamed
        self._remembered = remembered
        self._send = send
        self._held: Message | None = None
        self._watched = True
        self._body = bytearray()

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._watched = message["status"] == 200
            if self._watched:
                self._held = message
                return
        elif message["type"] == "http.response.body":
            if self._held is not None:
                await self._send(self._with_pooled(self._held))
                self._held = None
            if self._watched:
                self._body += message.get("body", b"")
                if not message.get("more_body", False):
                    await self._check()
        await self._send(message)

    def _with_pooled(self, start: Message) -> Message:
        pooled = self._front.pooled
        if pooled is None:
            return start
        headers = [*start.get("headers", []),
                   (POOLED_TOKENS_HEADER.encode(), str(pooled.take(self._front_id)).encode())]
        return {**start, "headers": headers}

    async def _check(self) -> None:
        try:
            await self._remembered
        except Exception:  # noqa: BLE001 - a monitor fault must not fail the answer
            logger.exception("cacheprune front: remembering a prompt's private text failed")
        try:
            answers = answer_texts(bytes(self._body), self._streamed)
            self._front.watch.check(self._tenant, f"front-{self._front_id}", answers)
        except Exception:  # noqa: BLE001 - a monitor fault must not fail the answer
            logger.exception("cacheprune front: checking an answer for leaks failed")


def _bearer(headers: Headers) -> str:
    scheme, _, key = headers.get("authorization", "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" else ""


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or None past MAX_BODY_BYTES."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        body += message.get("body", b"")
        if len(body) > MAX_BODY_BYTES:
            return None
        if not message.get("more_body", False):
            break
    return bytes(body)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the rewritten body once, then the client's later messages (the
    disconnect vLLM watches for to abort a request)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _with_headers(scope: Scope, body: bytes, front_id: str) -> Scope:
    """The request's scope with the new body's length and the front's own request id (a
    client's X-Request-Id is replaced: it would name another request's log lines)."""
    dropped = {b"content-length", b"x-request-id", b"transfer-encoding"}
    headers = [(name, value) for name, value in scope["headers"] if name.lower() not in dropped]
    headers += [(b"content-length", str(len(body)).encode()),
                (b"x-request-id", front_id.encode())]
    return {**scope, "headers": headers}


async def _error(scope: Scope, receive: Receive, send: Send, status: int, message: str,
                 kind: str = "invalid_request_error", param: str | None = None) -> None:
    """An error in the OpenAI API's shape (the `openai` client raises the matching class)."""
    content: dict[str, Any] = {"error": {"message": message, "type": kind, "param": param,
                                         "code": status}}
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    await JSONResponse(content, status_code=status, headers=headers)(scope, receive, send)
