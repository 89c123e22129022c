"""What every HTTP stage shares (the openai-compatible embedder, the chat-completions stage): one JSON
POST endpoint with bounded retries (httpx + tenacity), a Retry-After honoured, redirects refused, and
the API key read from a named environment variable when each request is sent, never stored on an
object, in a config, a cache or a message (every message is redacted before it is raised).

    poster = JSONPoster(url, api_key_env="OPENAI_API_KEY", fail=lambda msg, status, attempts: MyError(msg))
    doc = poster.post({"model": "m", "input": ["x"]})       # parsed JSON of a 2xx answer
"""
from __future__ import annotations

import email.utils
import ipaddress
import json
import os
import socket
import ssl
import threading
import time
import urllib.parse
from functools import cache
from typing import TYPE_CHECKING, Any, Callable, Generator, NoReturn

if TYPE_CHECKING:  # imported where a request is made: ~0.1 s that a run without an HTTP stage never pays
    import httpx
    import tenacity

RETRYABLE_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
WHOLE_REQUEST_GRACE_S = 0.5  # past `timeout`: httpx's own per-read timeout names a plain stall first

# (message, HTTP status or None, attempts) -> the exception a stage raises
FailureFactory = Callable[[str, "int | None", int], Exception]


class AttemptFailed(Exception):
    """One request that got no usable response: what went wrong (already redacted), the HTTP status if
    there was one, whether another attempt may succeed, and the server's Retry-After in seconds."""

    def __init__(self, problem: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(problem)
        self.problem, self.retryable, self.status, self.retry_after = problem, retryable, status, retry_after


@cache
def bearer_from_environment() -> type:
    """The httpx.Auth class BearerFromEnvironment (defined on first use, with httpx)."""
    import httpx

    class BearerFromEnvironment(httpx.Auth):
        """`Authorization: Bearer <key>` on each request, the key read when the request is sent, so it is
        held by no object that outlives the request (the client, the stage, a traceback's locals)."""

        def __init__(self, key: Callable[[], str | None]):
            self._key = key

        def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
            request.headers["Authorization"] = "Bearer " + (self._key() or "")
            yield request

    return BearerFromEnvironment


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception httpx (and httpcore) chained under `exc`: the socket's own error."""
    while (inner := exc.__cause__ or exc.__context__) is not None:
        exc = inner
    return exc


def _tries(attempts: int, seconds: float) -> str:
    return f"{attempts} attempt{'s' if attempts > 1 else ''} in {seconds:.1f} s"


class RequestFailure:
    """Mixin of a stage's HTTP error: the URL, the HTTP status if there was one, and the attempts made.
    The message names the URL, never the API key."""

    def __init__(self, message: str, *, url: str, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.url, self.status, self.attempts = url, status, attempts


# --- configuration checks every HTTP stage makes ------------------------------------------------------

def require_key_variable(api_key_env: str | None, error: Callable[[str], Exception]) -> str | None:
    """Fail when the run is configured, not after its first request, if the named variable is unset."""
    if api_key_env is not None and not env_key(api_key_env):
        raise error(f"environment variable {api_key_env} is not set or empty")
    return api_key_env


def refuse_key_in_config(given: Any) -> None:
    """Results record the config, so a key there would leak into every results file."""
    if isinstance(given, dict) and "api_key" in given:
        raise ValueError("api_key is never read from a config file; put the key in an environment variable "
                         "and name it with api_key_env (e.g. api_key_env = \"OPENAI_API_KEY\")")


def check_base_url(base_url: str, redact: Callable[[str], str] = lambda s: s) -> None:
    parts = urllib.parse.urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url must be an http(s) URL such as https://api.openai.com/v1, "
                         f"got {redact(base_url)!r}")
    if parts.username is not None or parts.password is not None:
        # never echo it: the user part may be a credential
        raise ValueError("base_url must not contain user:password@; put the key in an environment variable "
                         "and name it with api_key_env")
    if parts.query or parts.fragment:
        raise ValueError(f"base_url must not have a query string or fragment "
                         f"(got {parts.scheme}://{parts.netloc}{parts.path}?...)")


def host_of(base_url: str) -> str:
    """host[:port] of a base URL, lower case: part of a model id, never the key."""
    parts = urllib.parse.urlsplit(base_url)
    return parts.hostname.lower() + (f":{parts.port}" if parts.port else "")


def endpoint_of(base_url: str) -> str:
    """host[:port] and path of a base URL (host lower case, no trailing slash): two paths on one host can
    be two servers or two models (a proxy routing /openai/v1 and /local/v1), so a cache key holds both."""
    path = urllib.parse.urlsplit(base_url).path.rstrip("/")
    return host_of(base_url) + path


def env_key(api_key_env: str | None) -> str:
    return os.environ.get(api_key_env, "").strip() if api_key_env else ""


# --- the endpoint -------------------------------------------------------------------------------------

class JSONPoster:
    """POST JSON to one URL and return the parsed JSON of a 2xx answer.

    408, 429, 5xx, connection errors and timeouts are retried with exponential backoff (`backoff_base` x
    2^n, at most `backoff_max`; a Retry-After header is honoured instead), at most `max_retries` times and
    never starting a retry past `max_retry_time` seconds; other statuses fail at once.  Redirects are
    refused so the key is never sent to another host; a loopback server is reached directly, never
    through a proxy from the environment.  `fail(message, status, attempts)` builds the stage's own
    error; `stats` counts requests and retries (a stage may pass its own dict to share it)."""

    def __init__(self, url: str, *, fail: FailureFactory, api_key_env: str | None = None,
                 missing_key: Callable[[str], Exception] = ValueError, timeout: float = 60.0,
                 max_retries: int = 5, backoff_base: float = 0.5, backoff_max: float = 20.0,
                 max_retry_time: float = 120.0, user_agent: str = "harness/1 (python httpx)",
                 stats: dict[str, int] | None = None):
        self.url, self.api_key_env, self._fail_factory, self._missing_key = url, api_key_env, fail, missing_key
        self.timeout, self.max_retries, self.backoff_base = timeout, max_retries, backoff_base
        self.backoff_max, self.max_retry_time, self.user_agent = backoff_max, max_retry_time, user_agent
        self.stats = stats if stats is not None else {}
        self.stats.setdefault("requests", 0)
        self.stats.setdefault("retries", 0)
        self._http: httpx.Client | None = None

    @classmethod
    def for_stage(cls, stage: Any, url: str, *, fail: FailureFactory, missing_key: Callable[[str], Exception],
                  user_agent: str, stats: dict[str, int]) -> JSONPoster:
        """The endpoint of an HTTP stage whose fields name the key variable, timeout and retry bounds."""
        return cls(url, fail=fail, api_key_env=stage.api_key_env, missing_key=missing_key, timeout=stage.timeout,
                   max_retries=stage.max_retries, backoff_base=stage.backoff_base, backoff_max=stage.backoff_max,
                   max_retry_time=stage.max_retry_time, user_agent=user_agent, stats=stats)

    # -- the key ---------------------------------------------------------------------------------------
    def api_key(self) -> str | None:
        if self.api_key_env is None:
            return None
        key = env_key(self.api_key_env)
        if not key:
            raise self._missing_key(f"environment variable {self.api_key_env} (api_key_env) is not set or empty")
        return key

    def redact(self, text: str) -> str:
        key = env_key(self.api_key_env)
        return text.replace(key, "***") if key else text

    def fail(self, message: str, status: int | None = None, attempts: int = 1) -> Exception:
        return self._fail_factory(self.redact(f"POST {self.url}: {message}"), status, attempts)

    # -- the connection --------------------------------------------------------------------------------
    def client(self) -> httpx.Client:
        import httpx

        if self._http is None:
            host = urllib.parse.urlsplit(self.url).hostname
            self._http = httpx.Client(
                timeout=self.timeout,
                follow_redirects=False,  # a redirect would carry the key elsewhere: reported instead
                trust_env=not is_loopback(host),  # a local server is never behind http_proxy
                verify=ssl.create_default_context(),  # the system's CA store (and SSL_CERT_FILE)
                auth=bearer_from_environment()(self.api_key) if self.api_key_env is not None else None,
                headers={"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": self.user_agent})
        return self._http

    def close(self) -> None:
        """Close the pooled connections (a later request opens new ones)."""
        if self._http is not None:
            self._http.close()
            self._http = None

    # -- one call, with retries ------------------------------------------------------------------------
    def post(self, payload: dict[str, Any]) -> Any:
        import tenacity

        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(AttemptFailed),
            # a failure that will not fix itself ends at once; otherwise attempts and time are bounded
            stop=tenacity.stop_any(lambda state: not state.outcome.exception().retryable,
                                   tenacity.stop_after_attempt(self.max_retries + 1),
                                   tenacity.stop_before_delay(self.max_retry_time)),
            wait=self._backoff,
            before_sleep=self._count_retry,
            retry_error_callback=self._give_up,
        )
        for attempt in retrying:
            with attempt:
                raw = self._send(body)
        return self._parse_json(raw, attempt.retry_state.attempt_number)

    def _send(self, body: bytes) -> bytes:
        """One request: the response body of a 2xx answer, else an AttemptFailed.

        `timeout` bounds the whole request, not only each read: httpx's timeouts apply per operation, so
        a server sending one byte every few seconds would hold a run forever.  The request runs in a
        thread that is abandoned at the deadline (its connection closed; it ends at its next read)."""
        import httpx

        self.stats["requests"] += 1
        client = self.client()
        outcome: dict[str, Any] = {}

        def request() -> None:
            try:
                outcome["response"] = client.post(self.url, content=body)
            except BaseException as exc:  # handed to the caller's thread
                outcome["error"] = exc

        worker = threading.Thread(target=request, name="harness-http-request", daemon=True)
        worker.start()
        worker.join(self.timeout + WHOLE_REQUEST_GRACE_S)
        if worker.is_alive():
            self._http = None  # a fresh client (and connection) for any retry
            try:
                client.close()
            except Exception:  # closing under a thread that still reads: nothing to report
                pass
            raise AttemptFailed(f"no complete response within timeout = {self.timeout:g} s (the server is answering "
                                "too slowly; the whole request is bounded by `timeout`)", retryable=True)
        if "error" in outcome:
            exc = outcome["error"]
            if not isinstance(exc, httpx.RequestError):
                raise exc
            problem, retryable = self._describe_transport_error(exc)
            raise AttemptFailed(self.redact(problem), retryable=retryable) from None
        response = outcome["response"]
        if not response.is_success:
            raise AttemptFailed(self.redact(self._describe_status(response)), status=response.status_code,
                                retryable=response.status_code in RETRYABLE_STATUS,
                                retry_after=retry_after_seconds(response.headers.get("Retry-After")))
        return response.content

    def _backoff(self, state: tenacity.RetryCallState) -> float:
        """The server's Retry-After when it sent one, else backoff_base x 2^(n-1), at most backoff_max."""
        failed = state.outcome.exception()
        if isinstance(failed, AttemptFailed) and failed.retry_after is not None:
            return failed.retry_after
        return min(self.backoff_max, self.backoff_base * 2 ** (state.attempt_number - 1))

    def _count_retry(self, state: tenacity.RetryCallState) -> None:
        self.stats["retries"] += 1

    def _give_up(self, state: tenacity.RetryCallState) -> NoReturn:
        failed: AttemptFailed = state.outcome.exception()
        tries = _tries(state.attempt_number, state.seconds_since_start or 0.0)
        if not failed.retryable:
            why = f"not retried; {tries}"
        elif state.attempt_number > self.max_retries:
            why = f"gave up after {tries}; max_retries = {self.max_retries}"
        else:
            asked = (f"server asked to retry after {state.upcoming_sleep:g} s; "
                     if failed.retry_after is not None else "")
            why = (f"gave up after {tries}; {asked}the next retry would pass "
                   f"max_retry_time = {self.max_retry_time:g} s")
        raise self.fail(f"{failed.problem} ({why})", failed.status, state.attempt_number)

    def _describe_status(self, response: httpx.Response) -> str:
        code = response.status_code
        if 300 <= code < 400:
            location = response.headers.get("Location", "?")
            return (f"HTTP {code} redirect to {location} refused (the API key is never sent to another "
                    "address); set base_url to the final address")
        raw = response.content
        detail = ""
        try:
            doc = json.loads(raw.decode("utf-8"))
            err = doc.get("error", doc) if isinstance(doc, dict) else doc
            detail = err.get("message", "") if isinstance(err, dict) else str(err)
        except (ValueError, UnicodeDecodeError, AttributeError):
            detail = raw.decode("utf-8", "replace").strip()
        detail = " ".join(str(detail).split())[:300]
        hint = {401: " (check the key in api_key_env)", 403: " (check the key in api_key_env)",
                404: " (check base_url and model)"}.get(code, "")
        return f"HTTP {code} {response.reason_phrase}{hint}" + (f": {detail}" if detail else "")

    def _describe_transport_error(self, exc: httpx.RequestError) -> tuple[str, bool]:
        """(message, retryable).  A wrong host name or a bad certificate will not fix itself."""
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            return f"no response within timeout = {self.timeout:g} s", True
        cause = root_cause(exc)
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused (is the server running at this address?)", True
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve the host name ({cause})", False
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS certificate rejected ({cause})", False
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)) or isinstance(
                cause, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            return f"connection dropped by the server ({type(cause).__name__})", True
        return f"{type(exc).__name__}: {exc}", True

    def _parse_json(self, raw: bytes, attempt: int) -> Any:
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            snippet = " ".join(raw[:200].decode("utf-8", "replace").split())
            raise self.fail(f"response is not JSON: {snippet!r}", 200, attempt) from None
