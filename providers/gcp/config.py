"""`[providers.NAME]` of kind "gcp" and the environment variables that point it elsewhere (a test endpoint)."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from gpubot.domain.policy_sections import ImageProviderPolicy
from gpubot.providers.registry import KindSettings
from pydantic import AfterValidator, Field

__all__ = ["DEFAULT_IMAGE_PROJECTS", "GcpConfig", "GcpSettings", "image_project"]

DEFAULT_IMAGE_PROJECTS = ("deeplearning-platform-release", "ml-images")  # Google's Deep Learning VM images
_PROJECT = re.compile(r"(?:^|/)projects/([^/]+)/global/images/")


def image_project(image: str) -> str | None:
    """The project an image path or URL names (`projects/P/global/images/…`, `https://…/projects/P/global/images/…`);
    None for one of no project (`global/images/NAME`, a bare name: the launching project's own)."""
    found = _PROJECT.search(image)
    return found.group(1) if found else None


def _zone(value: str) -> str:
    if not re.fullmatch(r"[a-z]+(-[a-z]+)*[0-9]+-[a-z]", value):
        raise ValueError("a zone such as 'us-central1-a' (region, dash, zone letter)")
    return value


Zone = Annotated[str, AfterValidator(_zone)]


class GcpConfig(ImageProviderPolicy):
    """Google Compute Engine: the common keys, the image, the project and the zones to launch in."""

    kind: Literal["gcp"] = "gcp"
    project: str | None = None  # else the credentials' default project
    zones: list[Zone] = Field(default_factory=list)  # the zones to launch in, in the order to try them
    # The projects a booking's `--image` may come from (its own project's images always may); the images set here
    # in `image`/`images` are the team's own choice and are not checked.
    image_projects: list[str] = Field(default_factory=lambda: list(DEFAULT_IMAGE_PROJECTS))


class GcpSettings(KindSettings):
    """Credentials come from google.auth (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default credentials,
    or workload identity). GCP_API_URL points Compute Engine calls elsewhere (a test fake); GCP_ANONYMOUS_CREDENTIALS
    sends them unauthenticated, and is honoured only together with GCP_API_URL."""

    google_application_credentials: str | None = None  # read by google-auth itself; here to spot a .env-only one
    gcp_api_url: str | None = None
    gcp_anonymous_credentials: bool = False
