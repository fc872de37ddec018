"""Ranking offers: which cloud to try first for a request."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal

from gpubot.domain.cuda import cuda_meets
from gpubot.domain.model import Offer, OfferRequest

__all__ = ["matches", "rank_offers"]


def matches(offer: Offer, request: OfferRequest, price_in_team: Decimal) -> bool:
    """True when an offer fits the request's shape and its --provider/--region/--spot/--max-price."""
    return (offer.gpu == request.gpu and offer.count == request.count
            and (request.provider is None or offer.provider == request.provider)
            and (request.region is None or offer.region == request.region)
            and offer.spot == request.spot
            and (request.max_price is None or price_in_team <= request.max_price)
            and cuda_meets(offer.max_cuda, request.cuda))


def rank_offers(offers: Iterable[Offer], request: OfferRequest, *, strategy: str, order: Sequence[str],
                kind_of: Callable[[str], str], team_owned: Callable[[str], bool],
                price_in_team: Callable[[Offer], Decimal],
                skip: set[str] = frozenset(), avoid: frozenset[tuple[str, str]] = frozenset(),
                requests: Sequence[OfferRequest] = ()) -> list[Offer]:
    """Available matching offers, best first: the team's own machines (`team_owned` providers, already paid for),
    then cheapest or in the configured order (`order` names providers or their kinds, `kind_of` says which).

    With `requests` (alternatives), an offer fitting any of them counts; `avoid` leaves out (provider, region)."""
    def position(offer: Offer) -> int:
        names = list(order)
        for key in (offer.provider, kind_of(offer.provider)):
            if key in names:
                return names.index(key)
        return len(names)

    def key(offer: Offer) -> tuple:
        owned_first = 0 if team_owned(offer.provider) else 1
        price = price_in_team(offer) * offer.count  # per hour of the whole shape: alternatives differ in count
        main = (price, position(offer)) if strategy == "cheapest" else (position(offer), price)
        return (owned_first, *main, offer.provider, offer.region)

    wanted = [request, *requests]
    fitting = [o for o in offers if o.available and o.provider not in skip and (o.provider, o.region) not in avoid
               and any(matches(o, r, price_in_team(o)) for r in wanted)]
    return sorted(fitting, key=key)
