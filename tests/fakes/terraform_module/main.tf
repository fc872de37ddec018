# A module of Terraform built-ins only, driving the fake cloud of tests/fakes/terraform_cloud.py: the instance
# is made and deleted by local-exec provisioners calling its REST API, and read back through the http backend of
# a terraform_remote_state data source (the cloud answers an instance's description as a state document).

locals {
  api   = "${var.cloud_url}/v1/instances"
  trace = var.trace ? "set -x; " : ""
}

resource "terraform_data" "instance" {
  input = {
    api   = local.api
    name  = var.name
    trace = local.trace
  }

  provisioner "local-exec" {
    environment = {
      BODY = jsonencode({
        name           = var.name
        booking_id     = var.booking_id
        gpu            = var.gpu
        gpu_count      = var.gpu_count
        region         = var.region
        spot           = var.spot
        user_data      = var.startup_script
        ssh_public_key = var.ssh_public_key
      })
    }
    command = "${local.trace}printf '%s' \"$BODY\" | curl -sS --fail-with-body -H \"Authorization: Bearer $TF_VAR_cloud_token\" -H 'Content-Type: application/json' --data-binary @- ${local.api}"
  }

  # A destroy-time provisioner may read only self: the API and name travel in `input`. 404 means already gone.
  provisioner "local-exec" {
    when    = destroy
    command = <<-EOT
      ${self.input.trace}out=$(curl -sS -w ' HTTP %%{http_code}' -X DELETE -H "Authorization: Bearer $TF_VAR_cloud_token" ${self.input.api}/${self.input.name})
      case "$out" in *' HTTP 2'??|*' HTTP 404') exit 0 ;; esac
      echo "$out"
      exit 1
    EOT
  }
}

# A second step after the instance (as a real module attaches an address or a volume): the crash trial kills
# Terraform while the cloud holds this request, so the state holds the instance and no outputs yet.
resource "terraform_data" "address" {
  input = terraform_data.instance.output

  provisioner "local-exec" {
    command = "${local.trace}curl -sS --fail-with-body -X POST -H \"Authorization: Bearer $TF_VAR_cloud_token\" ${local.api}/${var.name}/address"
  }
}

data "terraform_remote_state" "instance" {
  backend = "http"
  config = {
    address  = "${local.api}/${var.name}/tfstate"
    username = "gpubot"
    password = var.cloud_token
  }
  depends_on = [terraform_data.address]
}
