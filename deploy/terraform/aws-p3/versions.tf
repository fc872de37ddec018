terraform {
  required_version = ">= 1.9"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
  }
}

# Credentials come from the AWS provider's standard chain (AWS_ACCESS_KEY_ID … in gpubot's environment, a
# profile, or an instance role); gpubot passes the region of the offer it chose.
provider "aws" {
  region = var.region
}
