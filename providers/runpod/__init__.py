"""RunPod: GPU pods (containers) through its REST v2 API."""
