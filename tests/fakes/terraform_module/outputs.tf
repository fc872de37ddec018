# What gpubot reads (docs/providers.md#terraform); the cloud publishes them once it knows them.
locals {
  published = data.terraform_remote_state.instance.outputs
}

output "instance_id" {
  value = try(local.published.instance_id, "")
}

output "ssh_host" {
  value = try(local.published.ssh_host, "")
}

output "ssh_user" {
  value = try(local.published.ssh_user, "ubuntu")
}

output "ssh_port" {
  value = try(local.published.ssh_port, 22)
}

output "ready" {
  value = try(local.published.ready, false)
}
