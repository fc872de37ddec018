terraform {
  required_version = ">= 1.9"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 5.0, < 8.0"
    }
  }
}

# Credentials: Google's application default credentials in gpubot's environment
# (GOOGLE_APPLICATION_CREDENTIALS, or workload identity), role roles/compute.instanceAdmin.v1.
provider "google" {
  project = var.project
  region  = var.region
}
