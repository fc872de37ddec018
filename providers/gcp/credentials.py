"""Google credentials for the GCP kind: application default credentials and their project, or anonymous ones for a
test endpoint; each way it can fail is a LookupError a person can act on."""

from __future__ import annotations

import os

from gpubot.providers.gcp.config import GcpSettings

__all__ = ["gcp_credentials"]


def gcp_credentials(settings: GcpSettings) -> tuple[object, str | None]:
    """Google's application default credentials and their project, or anonymous ones for a test endpoint."""
    if settings.gcp_anonymous_credentials:
        if not settings.gcp_api_url:
            raise LookupError("GCP_ANONYMOUS_CREDENTIALS is honoured only with GCP_API_URL (a test endpoint)")
        from google.auth.credentials import AnonymousCredentials

        return AnonymousCredentials(), None
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    exported = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if settings.google_application_credentials and not exported:
        raise LookupError("GOOGLE_APPLICATION_CREDENTIALS is only in .env: export it (google-auth reads the process "
                          "environment)")
    try:
        return google.auth.default(scopes=["https://www.googleapis.com/auth/compute"])
    except DefaultCredentialsError as exc:
        why = f": {str(exc).splitlines()[0][:200]}" if exported else ""
        raise LookupError("no Google credentials (GOOGLE_APPLICATION_CREDENTIALS, `gcloud auth application-default "
                          f"login`, or workload identity){why}") from None
