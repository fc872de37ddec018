"""Contract tests: every request body the RunPod and Lambda adapters send, and every answer their fakes give,
checked against the vendors' own OpenAPI schemas (the copied parts in tests/contracts, jsonschema 2020-12).

Each test drives the adapter through the calls and errors it meets in use, then walks what the fake recorded.
A fake that drifts from the documented shapes fails here as surely as an adapter that sends a field the vendor
does not accept (the v2 create body, for one, admits no `interruptible`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal

import pytest
from gpubot.domain.errors import ProviderError
from gpubot.domain.model import Offer, OfferRequest, instance_tag
from gpubot.domain.ports import LaunchSpec
from gpubot.providers.lambda_cloud.adapter import LambdaCloud
from gpubot.providers.lambda_cloud.config import LambdaConfig
from gpubot.providers.runpod.adapter import RunPod
from gpubot.providers.runpod.config import RunPodConfig

from tests.contracts import contract_problems, parameter_problems, parameter_type
from tests.fakes.lambda_api import FakeLambda
from tests.fakes.runpod_api import FakeRunPod
from tests.fakes.server import Request

# (method, path regex) → (request schema or None, {status: answer schema or None for "no body"})
RUNPOD_ROUTES = {
    ("POST", r"/v2/pods"): ("CreatePodRequest", {201: "Pod", 400: "ErrorResponse", 402: "ErrorResponse",
                                                 403: "ErrorResponse", 422: "ErrorResponse"}),
    ("GET", r"/v2/pods"): (None, {200: "ListPodsResponse"}),
    ("GET", r"/v2/pods/[^/]+"): (None, {200: "Pod", 404: "ErrorResponse"}),
    ("DELETE", r"/v2/pods/[^/]+"): (None, {204: None, 404: "ErrorResponse"}),
    ("GET", r"/v2/catalog/gpus"): (None, {200: "ListGpuTypesResponse", 400: "ErrorResponse",
                                          422: "ErrorResponse"}),
}
LAMBDA_ROUTES = {
    ("GET", r"/api/v1/instance-types"): (None, {200: "ListInstanceTypesOk"}),
    ("POST", r"/api/v1/instance-operations/launch"): ("LaunchRequest", {200: "LaunchOk", 400: "LaunchBadRequest",
                                                                         404: "LaunchNotFound"}),
    ("GET", r"/api/v1/instances"): (None, {200: "ListInstancesOk"}),
    ("GET", r"/api/v1/instances/[^/]+"): (None, {200: "GetInstanceOk", 404: "GetInstanceNotFound"}),
    ("POST", r"/api/v1/instance-operations/terminate"): ("TerminateRequest", {200: "TerminateOk",
                                                                               404: "TerminateNotFound"}),
}
CATALOG_PARAMETERS = {"include": "CatalogIncludeParam", "product": "GpuProductFilter", "count": "GpuCountFilter",
                      "cloud": "GpuCloudFilter", "minCudaVersion": "MinCudaVersionFilter"}


def route_of(routes: dict, request: Request) -> tuple:
    return next(spec for (method, path), spec in routes.items()
                if method == request.method and re.fullmatch(path, request.path))


def exchange_problems(vendor: str, routes: dict, request: Request) -> list[str]:
    """How one recorded request and its answer break the vendor's schemas."""
    body_schema, answers = route_of(routes, request)
    problems = contract_problems(vendor, body_schema, request.json()) if body_schema else []
    status, payload = request.answer
    assert status in answers, f"{request.method} {request.path} answered {status}, undocumented here"
    if answers[status] is None:
        problems += [] if payload is None else [f"{status} must have no body"]
    else:
        problems += contract_problems(vendor, answers[status], payload)
    return [f"{request.method} {request.path} → {status}: {p}" for p in problems]


def query_problems(request: Request) -> list[str]:
    """The catalog query against its documented parameters (comma-separated arrays, integers)."""
    problems = []
    for name, values in request.query.items():
        kind = parameter_type("runpod", CATALOG_PARAMETERS[name])
        value = values[0].split(",") if kind == "array" else int(values[0]) if kind == "integer" else values[0]
        problems += [f"{name}: {p}" for p in parameter_problems("runpod", CATALOG_PARAMETERS[name], value)]
    return problems


# -- RunPod -------------------------------------------------------------------------------------------------
@pytest.fixture
def runpod() -> Iterator[FakeRunPod]:
    fake = FakeRunPod("rk")
    fake.start()
    yield fake
    fake.stop()


def runpod_session(fake: FakeRunPod) -> None:
    """What the adapter does in use: probe, place (and fail to place), follow a pod up, list, release."""
    adapter = RunPod("runpod", RunPodConfig(regions=["EU-RO-1", "US-TX-3"]), "rk",
                     f"{fake.url}/v2", sleep=lambda _s: None, catalog_ttl=0)
    offers = adapter.offers(OfferRequest("h100", 2, cuda="12.6")) + adapter.offers(OfferRequest("rtx4090", 1))
    pod = adapter.launch(offers[0], LaunchSpec(1, instance_tag(1, "a"), start_command="python serve.py",
                                                ssh_public_key="ssh-ed25519 AAAA x", cuda="12.6"))
    for _ in range(4):
        adapter.describe(pod)
    adapter.list_owned()
    fake.balance_exhausted = True
    _refused(adapter.launch, offers[-1], LaunchSpec(2, instance_tag(2, "b")))
    fake.balance_exhausted = False
    fake.denied_gpus.add(offers[-1].ref)
    _refused(adapter.launch, offers[-1], LaunchSpec(3, instance_tag(3, "c")))
    fake.set_free(offers[0].ref, "EU-RO-1", 0)
    _refused(adapter.launch, offers[0], LaunchSpec(4, instance_tag(4, "d"), cuda="12.6"))
    _refused(adapter.launch, offers[0], LaunchSpec(5, ""))
    adapter.terminate(pod)
    adapter.terminate(pod)
    adapter.describe(pod)
    adapter.close()


def _refused(call, *args) -> None:
    with pytest.raises(ProviderError):
        call(*args)


def test_runpod_requests_and_answers_keep_the_v2_contract(runpod: FakeRunPod) -> None:
    runpod_session(runpod)
    statuses = {(r.method, r.answer[0]) for r in runpod.requests}
    assert {("POST", 201), ("POST", 400), ("POST", 402), ("POST", 403), ("POST", 422), ("GET", 404),
            ("DELETE", 204), ("DELETE", 404)} <= statuses, "the session should meet every documented answer"
    problems = [p for r in runpod.requests for p in exchange_problems("runpod", RUNPOD_ROUTES, r)]
    problems += [p for r in runpod.requests if r.path == "/v2/catalog/gpus" for p in query_problems(r)]
    assert [p for p in problems if "validation failed" not in p and "→ 422" not in p] == []
    [rejected] = [r for r in runpod.requests if r.answer[0] == 422]  # the adapter sent a nameless pod, on purpose
    assert "$.name: '' should be non-empty" in contract_problems("runpod", "CreatePodRequest", rejected.json())


def test_an_interruptible_pod_is_outside_the_v2_contract(runpod: FakeRunPod) -> None:
    body = {"name": "gpubot-1-a", "image": "runpod/pytorch", "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": 1},
            "interruptible": True}
    assert contract_problems("runpod", "CreatePodRequest", body) == [
        "$: Unevaluated properties are not allowed ('interruptible' was unexpected)"]


def test_the_runpod_fake_answers_a_contract_violation_like_the_vendor(runpod: FakeRunPod) -> None:
    import httpx

    answer = httpx.post(f"{runpod.url}/v2/pods", headers={"Authorization": "Bearer rk"},
                        json={"name": "x", "image": "i", "gpu": {"id": "NVIDIA L40S", "minCudaVersion": "12"}})
    assert answer.status_code == 422 and contract_problems("runpod", "ErrorResponse", answer.json()) == []
    assert any("minCudaVersion" in line for line in answer.json()["errors"])


# -- Lambda -------------------------------------------------------------------------------------------------
@pytest.fixture
def lambda_fake() -> Iterator[FakeLambda]:
    fake = FakeLambda("lk", launch_window=0.0)
    fake.start()
    yield fake
    fake.stop()


def lambda_session(fake: FakeLambda) -> None:
    """Probe, launch (and fail to), follow an instance up, list, terminate, ask about it once gone."""
    adapter = LambdaCloud("lambda", LambdaConfig(), "lk", f"{fake.url}/api/v1",
                          sleep=lambda _s: None, request_interval=0, launch_interval=0, catalog_ttl=0)
    offer = next(o for o in adapter.offers(OfferRequest("h100", 8)) if o.available)
    instance = adapter.launch(offer, LaunchSpec(1, instance_tag(1, "a"), start_command="python train.py"))
    for _ in range(3):
        adapter.describe(instance)
    adapter.list_owned()
    fake.set_capacity(offer.ref, [])
    _refused(adapter.launch, offer, LaunchSpec(2, instance_tag(2, "b")))
    fake.quota_exceeded = True
    _refused(adapter.launch, offer, LaunchSpec(3, instance_tag(3, "c")))
    fake.quota_exceeded = False
    _refused(adapter.launch, Offer("lambda", "us-west-1", "h100", 8, Decimal(1), "USD", ref="gpu_9x_nothing"),
             LaunchSpec(4, instance_tag(4, "d")))
    adapter.terminate(instance)
    adapter.terminate(instance)
    adapter.describe(instance)
    adapter.close()


def test_lambda_requests_and_answers_keep_the_v1_contract(lambda_fake: FakeLambda) -> None:
    lambda_session(lambda_fake)
    statuses = {(r.method, r.path.rsplit("/", 1)[-1] if "operations" in r.path else "", r.answer[0])
                for r in lambda_fake.requests}
    assert {("POST", "launch", 200), ("POST", "launch", 400), ("POST", "launch", 404),
            ("POST", "terminate", 404)} <= statuses
    problems = [p for r in lambda_fake.requests for p in exchange_problems("lambda", LAMBDA_ROUTES, r)]
    assert problems == []


def test_lambdas_two_404s_have_their_documented_shapes(lambda_fake: FakeLambda) -> None:
    import httpx

    headers = {"Authorization": "Bearer lk"}
    gone = httpx.get(f"{lambda_fake.url}/api/v1/instances/0123456789abcdef", headers=headers)
    wrong = httpx.get(f"{lambda_fake.url}/api/v1/instance/0123456789abcdef", headers=headers)
    assert (gone.status_code, wrong.status_code) == (404, 404)
    assert contract_problems("lambda", "GetInstanceNotFound", gone.json()) == []
    assert contract_problems("lambda", "ApiErrorNotFound", wrong.json()["error"]) == []
