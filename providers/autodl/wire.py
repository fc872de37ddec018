"""AutoDL vocabulary: GPU names, default prices, the response envelope and how its errors map to ours.

AutoDL publishes no error-code table (spec §1, §1.3), so errors are classified by pattern:

    msg (or code) ~ 库存 | 资源不足 | no stock | sold out          → NoCapacity(scope="region")
    HTTP 401/403, code ~ Auth/Token/Permission, msg ~ 无当前资源访问权限 → AuthFailed
    code/msg ~ invalid / param / 参数 / not found / 不存在 …     → InvalidRequest
    anything else, or an unreadable body                         → Transient (body logged)
"""

from __future__ import annotations

import logging
import re
from decimal import Decimal
from typing import Any

import httpx
from gpubot.domain.errors import AuthFailed, InvalidRequest, NoCapacity, ProviderError, Transient

__all__ = [
    "AUTODL_GPUS",
    "DEFAULT_PRICES_CNY",
    "PRICES_AS_OF",
    "catalog_key",
    "classify",
    "unwrap",
]

log = logging.getLogger(__name__)

# AutoDL ESD GPU name (as gpu_stock returns it and gpu_name_set takes it) → catalog key.
# [V3] "RTX 4090", "RTX 3090" appear in gpu_stock samples of third-party clients (spec A3/A4/A5).
# [I]  the others are AutoDL's market names as assembled for this table; unverified against a live account.
# AutoDL's V100 is the 32 GB SXM2 part; it maps to "v100" (catalog lists 16 GB) because there is no 32 GB key.
AUTODL_GPUS: dict[str, str] = {
    "RTX 4090": "rtx4090",
    "RTX 3090": "rtx3090",
    "RTX 5090": "rtx5090",
    "RTX PRO 6000": "rtxpro6000",
    "H800": "h800",
    "A100-SXM4-80GB": "a100-80g",
    "A100-PCIE-40GB": "a100",
    "L20": "l20",
    "V100-SXM2-32GB": "v100",
}

# CNY per GPU-hour, used when policy.prices has no entry. Spec §8 [g]: a third-party design doc dated
# 2026-03-28, "会员价", unverified. rtxpro6000 is the official Pro-API example `payg_price: 1970` [A1].
PRICES_AS_OF = "2026-03-28"
DEFAULT_PRICES_CNY: dict[str, Decimal] = {
    "a100": Decimal("3.28"),
    "a100-80g": Decimal("6.68"),
    "h800": Decimal("8.88"),
    "v100": Decimal("2.28"),
    "rtx4090": Decimal("1.98"),
    "rtxpro6000": Decimal("1.97"),
}

_VENDOR_PREFIX = re.compile(r"^(NVIDIA\s+)?(GeForce\s+)?", re.IGNORECASE)
_NO_STOCK = re.compile(r"库存|资源不足|no stock|sold out", re.IGNORECASE)
_NO_STOCK_CODE = re.compile(r"stock|noresource|resourceunavailable", re.IGNORECASE)
_AUTH_CODE = re.compile(r"auth|token|permission", re.IGNORECASE)
_AUTH_MSG = re.compile(r"无当前资源访问权限|权限|token|unauthori[sz]ed|forbidden|permission denied",
                       re.IGNORECASE)
_INVALID = re.compile(r"invalid|param|参数|格式|不合法|不支持|required|必填|validat|not ?found|不存在"
                      r"|illegal", re.IGNORECASE)


def catalog_key(autodl_name: str) -> str | None:
    """The catalog key for an AutoDL GPU name; private-cloud names ("NVIDIA GeForce RTX 4090") fold too."""
    name = autodl_name.strip()
    return AUTODL_GPUS.get(name) or AUTODL_GPUS.get(_VENDOR_PREFIX.sub("", name))


def classify(provider: str, code: str, msg: str, region: str | None = None) -> ProviderError:
    """Turn a non-Success envelope into our error tree (see the module docstring)."""
    text = f"{code}: {msg}" if msg else code
    if _NO_STOCK.search(msg) or _NO_STOCK_CODE.search(code):
        return NoCapacity(provider, text, scope="region", region=region)
    if _AUTH_CODE.search(code) or _AUTH_MSG.search(msg):
        return AuthFailed(provider, text)
    if _INVALID.search(code) or _INVALID.search(msg):
        return InvalidRequest(provider, text)
    return Transient(provider, text)


def unwrap(provider: str, response: httpx.Response, region: str | None = None) -> Any:
    """The `data` of a Success envelope; any other answer raises the matching ProviderError."""
    if response.status_code in (401, 403):
        raise AuthFailed(provider, f"HTTP {response.status_code}")
    body = _json(provider, response)
    if not isinstance(body, dict) or "code" not in body:
        if 400 <= response.status_code < 500:
            raise InvalidRequest(provider, f"HTTP {response.status_code}")
        raise _unknown(provider, response, "no envelope")
    if body["code"] != "Success":
        error = classify(provider, str(body["code"]), str(body.get("msg") or ""), region)
        if isinstance(error, Transient):
            _log_body(provider, response)
        raise error
    return body.get("data")


def _json(provider: str, response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise _unknown(provider, response, "unreadable JSON") from None


def _unknown(provider: str, response: httpx.Response, what: str) -> Transient:
    _log_body(provider, response)
    return Transient(provider, f"{what} (HTTP {response.status_code})")


def _log_body(provider: str, response: httpx.Response) -> None:
    # The body is the vendor's answer; the token travels only in our request headers and is never logged.
    log.warning("%s answered HTTP %s: %s", provider, response.status_code, response.text[:500])
