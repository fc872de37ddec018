"""Which project a GCP image comes from (providers.gcp.config.image_project), for the `image_projects` check."""

from __future__ import annotations

import pytest
from gpubot.providers.gcp.config import GcpConfig, image_project


@pytest.mark.parametrize(("image", "project"), [
    ("projects/deeplearning-platform-release/global/images/family/common-cu124-debian-11-py310",
     "deeplearning-platform-release"),
    ("https://www.googleapis.com/compute/v1/projects/ml-images/global/images/tf-2-16", "ml-images"),
    ("https://compute.googleapis.com/compute/v1/projects/evil/global/images/family/x", "evil"),
    ("global/images/team-cuda", None), ("team-cuda", None),
    ("projects/evil/zones/us-central1-a/disks/x", None),  # not an image path: GCE refuses it as a source image
])
def test_the_project_of_an_image(image, project):
    assert image_project(image) == project


def test_the_default_projects_are_googles_deep_learning_images():
    assert GcpConfig().image_projects == ["deeplearning-platform-release", "ml-images"]
