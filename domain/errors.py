"""The one error tree of gpubot.

    GpubotError
    ├── UserError                 bad input from a person; shown to them as is, changes nothing
    │   ├── ParseError            the /gpu text could not be understood (carries a suggestion)
    │   ├── NotFound              a booking / watch id that does not exist
    │   ├── Forbidden             the caller may not act on that booking
    │   │   └── NotYours          …because it is `owner`'s (the bot shows them as a mention)
    │   └── Refused               a rule says no (budget block, max duration, bad state)
    │       ├── OverBudget        …a budget would be passed (the facts: which, by how much)
    │       └── NothingSells      …no configured cloud offers the shape (the facts: what sells instead)
    ├── ConfigError               the policy file or environment is invalid (key, value, expected)
    └── ProviderError             a cloud said no; raised only at the adapter edge
        ├── NoCapacity            nothing free in `scope` (offer, region or provider): try the next offer
        │   └── NoAccess          this account may not use that offer (a pool it cannot reach): skip it
        ├── QuotaExceeded         an account limit: skip its `scope` (region or provider), alert on-call
        ├── AuthFailed            bad credentials: skip the provider, alert on-call
        ├── RateLimited           slow down; `retry_after` seconds when the vendor says
        ├── InvalidRequest        the vendor rejected our request as malformed
        │   └── PastTimeLimit     …it asks for longer than the provider lets one machine be held (`limit`)
        └── Transient             5xx, timeouts, unknown answers: retry later
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from decimal import Decimal

from gpubot.domain.budget import Passed
from gpubot.domain.money import format_money

__all__ = [
    "AuthFailed",
    "ConfigError",
    "Forbidden",
    "GpubotError",
    "ImageRefused",
    "InvalidRequest",
    "NoAccess",
    "NoCapacity",
    "NotFound",
    "NotYours",
    "NothingSells",
    "OverBudget",
    "ParseError",
    "PastTimeLimit",
    "ProviderError",
    "QuotaExceeded",
    "RateLimited",
    "Refused",
    "Transient",
    "UserError",
]


class GpubotError(Exception):
    """Root of every error gpubot raises on purpose."""


class UserError(GpubotError):
    """A person's request cannot be carried out; the message is for them.

    The message may be a template with `{name}` fields filled from `params`: the bot then shows the template
    translated into the reader's language (it is the catalog's msgid) filled with the same values."""

    def __init__(self, message: str = "", /, **params: object) -> None:
        super().__init__(message.format(**params) if params else message)
        self.template, self.params = message, params


class ParseError(UserError):
    """The command text could not be parsed: `what` was wrong (a template filled from `what_params`), `how` is
    the right form, `suggestion` the closest valid word."""

    def __init__(self, message: str, suggestion: str | None = None, *, what: str | None = None,
                 how: str | None = None, what_params: dict | None = None) -> None:
        super().__init__(message)
        self.suggestion, self.what, self.how, self.what_params = suggestion, what, how, what_params or {}


class NotFound(UserError):
    """A referenced object does not exist."""


class Forbidden(UserError):
    """The caller may not do this."""


class NotYours(Forbidden):
    """The caller may not act on what belongs to `owner` (a Slack user id), whom the message's `{owner}` names."""

    def __init__(self, message: str, /, *, owner: str, **params: object) -> None:
        super().__init__(message, owner=owner, **params)
        self.owner = owner


class Refused(UserError):
    """A policy rule refuses the request."""


class OverBudget(Refused):
    """Refused as over budget: the booking (≈ `estimate`), or the extension of `extending` (costing `estimate`
    more, under `over_budget = mode`), would pass the `passed` budgets, all in `currency`. The bot words it from
    these facts; the English message is for logs."""

    def __init__(self, estimate: Decimal, currency: str, passed: Sequence[Passed], *, extending: str | None = None,
                 mode: str = "block") -> None:
        self.estimate, self.currency, self.passed = estimate, currency, tuple(passed)
        self.extending, self.mode = extending, mode
        over = "; ".join(f"{p.scope} would reach {format_money(p.reach, currency)} of "
                         f"{format_money(p.limit, currency)}" for p in self.passed)
        cost = format_money(estimate, currency)
        super().__init__(f"Extending {extending} would cost {cost} more, and {over}; so it is refused "
                         f"(over_budget = {mode}). An admin can extend it." if extending else
                         f"Over budget, so this booking (≈ {cost}) is refused: {over}, counting what is spent, "
                         f"running and already booked (scheduled, queued or waiting). Ask an admin to raise the "
                         f"budget.")


class NothingSells(Refused):
    """Refused at once: no configured cloud offers `count`× `gpu` (`filtered`: with the request's filters). When
    fewer sell, `largest` is the most one machine has; `failures` are the providers that could not say, and why;
    when only the price cap (`max_price`) left everything out, `cheapest` is the lowest price per GPU-hour on
    offer (team `currency`) and `cheapest_at` where (`provider region`)."""

    def __init__(self, gpu: str, count: int, display: str, *, filtered: bool = False, largest: int | None = None,
                 failures: Sequence[tuple[str, str]] = (), max_price: Decimal | None = None,
                 cheapest: Decimal | None = None, cheapest_at: str = "", currency: str = "") -> None:
        self.gpu, self.count, self.display, self.filtered = gpu, count, display, filtered
        self.largest, self.failures = largest, tuple(failures)
        self.max_price, self.cheapest, self.cheapest_at, self.currency = max_price, cheapest, cheapest_at, currency
        filters = " with those filters" if filtered else ""
        why = "; ".join(f"{p}: {reason}" for p, reason in self.failures)
        if cheapest is not None:
            super().__init__(f"No configured cloud offers {count}× {display} at {max_price} {currency} per GPU-hour "
                             f"or less; the cheapest is {cheapest} {currency} ({cheapest_at}).")
            return
        super().__init__(f"No configured cloud sells more than {largest}× {display} in one machine{filters}; book "
                         f"`{gpu}x{largest}`, or split the work over several bookings." if largest else
                         f"No configured cloud offers {count}× {display}{filters}." + (f" ({why})" if why else "")
                         + " Try `/gpu prices` to see what can be booked.")


class ConfigError(GpubotError):
    """Invalid configuration: names the key, the bad value and what was expected."""

    def __init__(self, key: str, value: object, expected: str) -> None:
        super().__init__(f"{key}: got {value!r}, expected {expected}")
        self.key, self.value, self.expected = key, value, expected


class ProviderError(GpubotError):
    """A cloud provider refused or failed; `provider` names which."""

    kind = "error"

    def __init__(self, provider: str, message: str = "") -> None:
        super().__init__(f"{provider}: {message}" if message else provider)
        self.provider = provider
        self.detail = message


class NoCapacity(ProviderError):
    """No capacity; `scope` is "offer", "region" or "provider"."""

    kind = "no_capacity"

    def __init__(self, provider: str, message: str = "", scope: str = "offer", region: str | None = None):
        super().__init__(provider, message)
        self.scope, self.region = scope, region


class NoAccess(NoCapacity):
    """The account cannot use this offer (RunPod 403 on create: no access to that pool); other offers may do."""

    kind = "no_access"

    def __init__(self, provider: str, message: str = "", region: str | None = None):
        super().__init__(provider, message, scope="offer", region=region)


class QuotaExceeded(ProviderError):
    """An account quota blocks the launch; `scope` is "region" (a regional limit) or "provider"."""

    kind = "quota"

    def __init__(self, provider: str, message: str = "", scope: str = "provider", region: str | None = None):
        super().__init__(provider, message)
        self.scope, self.region = scope, region


class AuthFailed(ProviderError):
    """Credentials were refused."""

    kind = "auth"


class RateLimited(ProviderError):
    """The provider asks us to slow down."""

    kind = "rate_limited"

    def __init__(self, provider: str, message: str = "", retry_after: float | None = None):
        super().__init__(provider, message)
        self.retry_after = retry_after


class InvalidRequest(ProviderError):
    """The provider rejected the request as invalid."""

    kind = "invalid"


class ImageRefused(InvalidRequest):
    """A booking's `--image` is not one the provider may boot: `what` is "owners" (an AWS AMI's owner) or
    "projects" (a GCP image's project), `allowed` those configured (`image_owners` / `image_projects`)."""

    kind = "image_refused"

    def __init__(self, provider: str, image: str, allowed: Sequence[str], what: str) -> None:
        super().__init__(provider, f"image {image!r} is not from one of the allowed {what}: {', '.join(allowed)}")
        self.image, self.allowed, self.what = image, tuple(allowed), what


class PastTimeLimit(InvalidRequest):
    """The provider holds one machine for at most `limit` (a Slurm partition's MaxTime), and `asked` is longer: a
    launch or an extension it will not take, whoever asks."""

    def __init__(self, provider: str, message: str = "", *, limit: timedelta, asked: timedelta) -> None:
        super().__init__(provider, message)
        self.limit, self.asked = limit, asked


class Transient(ProviderError):
    """A passing fault: 5xx, timeout, unreadable answer."""

    kind = "transient"
