# A T4 standby machine for gpubot: one N1 VM with T4s per booking, gpubot's boot script as its startup-script.
# gpubot applies this module only when it falls back to it (acquire.order or cheapest first), so nothing here
# decides whether to make the machine: no `count = var.autodl_available ? 0 : 1`.

locals {
  machine_types = { 1 = "n1-standard-8", 2 = "n1-standard-16", 4 = "n1-standard-32" }
  ssh_keys      = var.ssh_public_key == "" ? {} : { ssh-keys = "${var.ssh_user}:${var.ssh_public_key}" }
}

resource "google_compute_instance" "gpu" {
  name         = var.name
  zone         = "${var.region}-${var.zone_letter}"
  machine_type = local.machine_types[var.gpu_count]
  labels       = merge(var.labels, { gpubot-booking = tostring(var.booking_id) })

  boot_disk {
    initialize_params {
      image = var.image
      size  = var.disk_gb
      type  = "pd-balanced"
    }
  }

  guest_accelerator {
    type  = "nvidia-tesla-t4"
    count = var.gpu_count
  }

  # VMs with GPUs cannot live-migrate: they stop for host maintenance.
  scheduling {
    on_host_maintenance         = "TERMINATE"
    automatic_restart           = !var.spot
    preemptible                 = var.spot
    provisioning_model          = var.spot ? "SPOT" : "STANDARD"
    instance_termination_action = var.spot ? "DELETE" : null
  }

  network_interface {
    network    = var.network
    subnetwork = var.subnetwork

    access_config {} # an ephemeral external IP
  }

  metadata = merge(local.ssh_keys, {
    startup-script        = var.startup_script
    install-nvidia-driver = "True"
  })
}
