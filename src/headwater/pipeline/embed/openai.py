"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, TEI, vLLM,
Ollama…).

Requests carry up to ``batch_size`` texts. Timeouts, connection errors, HTTP 429 and 5xx
are retried with exponential backoff and jitter (tenacity), waiting at least what a
``Retry-After`` header asks. A batch that still fails, or that the endpoint rejects
(400/413/422), is retried one text at a time, so one bad input fails one text: the
failed texts come back as ``ItemError`` from ``embed_each``. Should every single text keep
failing transiently the endpoint is down, and ``TransientError`` is raised for the batch.
Tokens are counted with ``counter`` (default: the bundled MiniLM WordPiece tokenizer, a
close stand-in for most BERT-style served models; pass ``TokenizerCounter`` of the served
model's ``tokenizer.json`` for an exact budget).
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import SecretStr
from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from headwater.errors import ConfigError, CredentialError, ItemError, TransientError
from headwater.pipeline.embed.base import TokenCounter
from headwater.pipeline.embed.counting import count_tokens_many
from headwater.pipeline.embed.each import EmbedOutcome, first_error

_REJECTED = {400, 413, 422}
_RETRY_AFTER_MAX = 120.0  # seconds: a longer Retry-After fails the batch instead
_DOWN_AFTER = 3  # single-text transient failures before any success that mean "down"


class OpenAIEmbedder:
    """A client of one embedding model behind an OpenAI-compatible API."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: SecretStr | str | None = None,
        dimension: int | None = None,
        max_tokens: int = 512,
        batch_size: int = 64,
        timeout: float = 60.0,
        max_attempts: int = 5,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        counter: TokenCounter | None = None,
        model_id: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if batch_size < 1 or max_attempts < 1:
            raise ConfigError(
                f"batch_size={batch_size}, max_attempts={max_attempts}; expected both ≥ 1"
            )
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/") + "/",
            headers=headers,
            timeout=timeout,
            transport=transport,
        )
        self._base_url = base_url
        self._model = model
        self._model_id = model_id or f"openai-compatible/{model}"
        self._dimension = dimension
        self._max_tokens = max_tokens
        self._batch_size = batch_size
        self._attempts = max_attempts
        self._backoff = (backoff_initial, backoff_max)
        self._counter = counter
        self.requests = 0

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIEmbedder(base_url={self._base_url!r}, model={self._model!r})"

    @property
    def model_id(self) -> str:
        """The endpoint's model id."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """The vector size, asked of the endpoint once when not configured."""
        if self._dimension is None:
            self._dimension = len(self._retrying(["dimension probe"], self._attempts)[0])
        return self._dimension

    @property
    def max_tokens(self) -> int:
        """The token limit per text."""
        return self._max_tokens

    def _tokens(self) -> TokenCounter:
        if self._counter is None:
            from headwater.pipeline.embed.local import TokenizerCounter, bundled_model_dir

            self._counter = TokenizerCounter(bundled_model_dir() / "tokenizer.json")
        return self._counter

    def count_tokens(self, text: str) -> int:
        """Tokens the model would read for ``text``."""
        return self._tokens().count_tokens(text)

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        """Tokens the model would read for each text."""
        return count_tokens_many(self._tokens(), texts)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, or the first error."""
        return first_error(self.embed_each(texts))

    def embed_each(self, texts: Sequence[str]) -> list[EmbedOutcome]:
        """One vector or error per text, asked of the endpoint in batches."""
        outcomes: list[EmbedOutcome] = []
        for at in range(0, len(texts), self._batch_size):
            batch = list(texts[at : at + self._batch_size])
            try:
                outcomes.extend(self._retrying(batch, self._attempts))
            except ItemError as exc:
                outcomes.extend([exc] if len(batch) == 1 else self._one_by_one(batch))
            except TransientError:
                if len(batch) == 1:
                    raise  # no evidence against the text: the endpoint is failing
                outcomes.extend(self._one_by_one(batch))
        return outcomes

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one text at a time -----------------------------------------------------------

    def _one_by_one(self, batch: list[str]) -> list[EmbedOutcome]:
        """Each text alone, with fewer attempts; if the first few all fail transiently
        and none succeeds, the endpoint is down and the batch raises ``TransientError``."""
        outcomes: list[EmbedOutcome] = []
        down_after = min(_DOWN_AFTER, len(batch))
        failures_before_success = 0
        succeeded = False
        for text in batch:
            try:
                outcomes.append(self._retrying([text], max(2, self._attempts // 2))[0])
                succeeded = True
            except ItemError as exc:
                outcomes.append(exc)
            except TransientError as exc:
                failures_before_success += 1
                if not succeeded and failures_before_success >= down_after:
                    raise TransientError(
                        f"{self._base_url} failed for every text tried one at a time "
                        f"({exc}); the endpoint looks down. Check it and run again."
                    ) from exc
                outcomes.append(
                    ItemError("embed_error", f"the endpoint kept failing: {exc}", permanent=False)
                )
        return outcomes

    # -- requests ---------------------------------------------------------------------

    def _retrying(self, batch: list[str], attempts: int) -> list[list[float]]:
        retrying = Retrying(
            retry=retry_if_exception_type(TransientError),
            stop=stop_after_attempt(attempts),
            wait=self._wait,
            reraise=True,
        )
        result: list[list[float]] = retrying(self._request, batch)
        return result

    def _wait(self, state: RetryCallState) -> float:
        initial, ceiling = self._backoff
        exponential = min(ceiling, initial * float(2.0 ** (state.attempt_number - 1)))
        jittered = exponential / 2 + random.random() * exponential / 2
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            return min(max(exc.retry_after, jittered), max(ceiling, _RETRY_AFTER_MAX))
        return jittered

    def _request(self, batch: list[str]) -> list[list[float]]:
        self.requests += 1
        try:
            response = self._client.post(
                "embeddings",
                json={"model": self._model, "input": batch, "encoding_format": "float"},
            )
        except httpx.TimeoutException as exc:
            raise TransientError(f"{self._base_url} timed out: {exc}") from exc
        except httpx.TransportError as exc:
            raise TransientError(f"could not reach {self._base_url}: {exc}") from exc
        status = response.status_code
        if status == 429 or status >= 500:
            raise TransientError(
                f"{self._base_url} answered HTTP {status}: {_detail(response)}",
                retry_after=_retry_after(response.headers.get("retry-after")),
            )
        if status in (401, 403):
            raise CredentialError(
                f"{self._base_url} refused the API key (HTTP {status}); set a valid api_key."
            )
        if status in _REJECTED:
            raise ItemError("embed_error", f"the endpoint rejected the input: {_detail(response)}")
        if status >= 400:
            raise ConfigError(
                f"{self._base_url}embeddings answered HTTP {status} ({_detail(response)}); "
                f"expected an OpenAI-compatible endpoint serving model {self._model!r}. "
                "Check base_url (usually ending in /v1) and model."
            )
        return self._vectors(response, len(batch))

    def _vectors(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            body: Any = response.json()
            rows = sorted(body["data"], key=lambda row: int(row["index"]))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (ValueError, KeyError, TypeError) as exc:
            raise ItemError("embed_error", f"malformed embeddings response: {exc}") from exc
        if len(vectors) != expected:
            raise ItemError("embed_error", f"got {len(vectors)} vectors for {expected} texts")
        result = [_unit(v) for v in vectors]
        if self._dimension is not None and any(len(v) != self._dimension for v in result):
            raise ConfigError(
                f"model {self._model!r} returned {len(result[0])}-dimensional vectors; "
                f"configured dimension is {self._dimension}. Fix dimension (or omit it)."
            )
        return result


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    if not vector or not math.isfinite(norm) or norm == 0.0:
        raise ItemError("embed_error", "the endpoint returned an empty or zero vector")
    return [x / norm for x in vector]


def _retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _detail(response: httpx.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    return text[:200] or response.reason_phrase
