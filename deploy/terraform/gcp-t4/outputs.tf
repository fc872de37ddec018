# What gpubot reads. The VM is RUNNING when the apply ends, so ssh_host is known then; `ready` is left out:
# gpubot counts the machine ready once ssh_host is set.

output "instance_id" {
  value = google_compute_instance.gpu.instance_id
}

output "ssh_host" {
  value = google_compute_instance.gpu.network_interface[0].access_config[0].nat_ip
}

output "ssh_user" {
  value = var.ssh_user
}

output "ssh_port" {
  value = 22
}
