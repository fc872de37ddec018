"""Google Cloud Compute Engine: GPU virtual machines through google-cloud-compute."""
