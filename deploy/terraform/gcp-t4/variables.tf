# ---- What gpubot passes for every booking (docs/providers.md#terraform) ----

variable "booking_id" {
  type        = number
  description = "The gpubot booking (#12): labelled on the VM."
}

variable "name" {
  type        = string
  description = "The booking's tag, gpubot-<booking>-<nonce>: the VM's name."
}

variable "gpu" {
  type        = string
  description = "The GPU gpubot offered from [providers.X] shapes."

  validation {
    condition     = var.gpu == "t4"
    error_message = "This module makes T4 machines only."
  }
}

variable "gpu_count" {
  type        = number
  description = "How many T4s on the VM: 1, 2 or 4."

  validation {
    condition     = contains([1, 2, 4], var.gpu_count)
    error_message = "An N1 VM takes 1, 2 or 4 T4s."
  }
}

variable "region" {
  type        = string
  description = "The region of the offer (one of [providers.X] regions), such as us-central1."
}

variable "spot" {
  type        = bool
  description = "Launch as a Spot VM (the booking asked for --spot and the shape has a spot_price)."
}

variable "startup_script" {
  type        = string
  sensitive   = true # it carries the telemetry agent's token
  description = "gpubot's boot script (its telemetry agent and the user's start command): the startup-script."
}

variable "ssh_public_key" {
  type        = string
  description = "The booking's SSH public key, or empty (then use your project's keys or OS Login)."
}

# ---- The team's own, set in [providers.X] vars ----

variable "project" {
  type        = string
  description = "The Google Cloud project."
}

variable "zone_letter" {
  type        = string
  default     = "a"
  description = "The zone of the region to launch in (us-central1-a for \"a\"): one that has T4s."
}

variable "network" {
  type    = string
  default = "default"
}

variable "subnetwork" {
  type        = string
  default     = null
  description = "A subnetwork of the network, when it is not in auto mode."
}

variable "image" {
  type        = string
  default     = "projects/deeplearning-platform-release/global/images/family/common-cu124-debian-11-py310"
  description = "The boot image; Google retires old Deep Learning VM families, so pin the one your project uses."
}

variable "disk_gb" {
  type    = number
  default = 200
}

variable "ssh_user" {
  type        = string
  default     = "gpubot"
  description = "The user the booking's SSH key is installed for (ssh-keys metadata)."
}

variable "labels" {
  type        = map(string)
  default     = {}
  description = "Your own labels (cost centre, owner …), added to gpubot's."
}
