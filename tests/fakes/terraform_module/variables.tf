# The variables gpubot passes for every booking (docs/providers.md#terraform).
variable "booking_id" {
  type = number
}

variable "name" {
  type        = string
  description = "The booking's tag, gpubot-<booking>-<nonce>: the instance's name."
}

variable "gpu" {
  type = string
}

variable "gpu_count" {
  type = number
}

variable "region" {
  type = string
}

variable "spot" {
  type = bool
}

variable "startup_script" {
  type        = string
  description = "gpubot's VM script: its telemetry agent and the user's start command."
}

variable "ssh_public_key" {
  type = string
}

# The test's own, set through [providers.X] vars and TF_VAR_cloud_token.
variable "cloud_url" {
  type        = string
  description = "Base URL of the fake cloud (tests/fakes/terraform_cloud.py)."
}

variable "cloud_token" {
  type        = string
  sensitive   = true
  description = "The cloud's API token; the provisioners read it as $TF_VAR_cloud_token."
}

variable "trace" {
  type        = bool
  default     = false
  description = "Print each provisioner command as it runs (set -x), as someone debugging a module would."
}
