# ---- What gpubot passes for every booking (docs/providers.md#terraform) ----

variable "booking_id" {
  type        = number
  description = "The gpubot booking (#12): tagged on everything this module makes."
}

variable "name" {
  type        = string
  description = "The booking's tag, gpubot-<booking>-<nonce>: the instance's Name."
}

variable "gpu" {
  type        = string
  description = "The GPU gpubot offered from [providers.X] shapes."

  validation {
    condition     = var.gpu == "v100"
    error_message = "This module makes V100 machines (p3) only."
  }
}

variable "gpu_count" {
  type        = number
  description = "How many GPUs: 1 (p3.2xlarge), 4 (p3.8xlarge) or 8 (p3.16xlarge)."

  validation {
    condition     = contains([1, 4, 8], var.gpu_count)
    error_message = "A p3 instance has 1, 4 or 8 V100s."
  }
}

variable "region" {
  type        = string
  description = "The region of the offer (one of [providers.X] regions)."
}

variable "spot" {
  type        = bool
  description = "Launch as a Spot instance (the booking asked for --spot and the shape has a spot_price)."
}

variable "startup_script" {
  type        = string
  sensitive   = true # it carries the telemetry agent's token
  description = "gpubot's boot script (its telemetry agent and the user's start command): the user data."
}

variable "ssh_public_key" {
  type        = string
  description = "The booking's SSH public key, or empty (then key_name, if set, is used)."
}

# ---- The team's own, set in [providers.X] vars ----

variable "subnet_id" {
  type        = string
  description = "The subnet to launch in (a public one, or one your VPN reaches)."
}

variable "security_group_ids" {
  type        = list(string)
  default     = []
  description = "Security groups of the instance (SSH from where your team works); empty: the VPC's default."
}

variable "ami_id" {
  type        = string
  default     = ""
  description = "The AMI; empty: the newest AWS Deep Learning Base GPU AMI (Ubuntu 22.04) of the region."
}

variable "key_name" {
  type        = string
  default     = null
  description = "An existing EC2 key pair, used when a booking brings no SSH key."
}

variable "root_volume_gb" {
  type    = number
  default = 200
}

variable "tags" {
  type        = map(string)
  default     = {}
  description = "Your own tags (cost centre, owner …), added to gpubot's."
}
