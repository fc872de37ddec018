# A V100 standby machine for gpubot: one p3 instance per booking, in the team's subnet, with gpubot's boot
# script as user data. gpubot applies this module only when it falls back to it (acquire.order or cheapest
# first), so nothing here decides whether to make the machine: no `count = var.autodl_available ? 0 : 1`.

locals {
  instance_types = { 1 = "p3.2xlarge", 4 = "p3.8xlarge", 8 = "p3.16xlarge" }
  tags           = merge(var.tags, { Name = var.name, "gpubot-booking" = tostring(var.booking_id) })
}

data "aws_ami" "deep_learning" {
  count       = var.ami_id == "" ? 1 : 0
  most_recent = true
  owners      = ["amazon"]

  filter {
    name   = "name"
    values = ["Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"]
  }

  filter {
    name   = "state"
    values = ["available"]
  }
}

resource "aws_key_pair" "booking" {
  count      = var.ssh_public_key == "" ? 0 : 1
  key_name   = var.name
  public_key = var.ssh_public_key
  tags       = local.tags
}

resource "aws_instance" "gpu" {
  ami                         = var.ami_id != "" ? var.ami_id : data.aws_ami.deep_learning[0].id
  instance_type               = local.instance_types[var.gpu_count]
  subnet_id                   = var.subnet_id
  vpc_security_group_ids      = var.security_group_ids
  associate_public_ip_address = true
  key_name                    = var.ssh_public_key == "" ? var.key_name : aws_key_pair.booking[0].key_name
  user_data                   = var.startup_script
  user_data_replace_on_change = true

  dynamic "instance_market_options" {
    for_each = var.spot ? [1] : []
    content {
      market_type = "spot"
      spot_options {
        spot_instance_type             = "one-time"
        instance_interruption_behavior = "terminate"
      }
    }
  }

  root_block_device {
    volume_size = var.root_volume_gb
    volume_type = "gp3"
  }

  metadata_options {
    http_tokens = "required"
  }

  tags        = local.tags
  volume_tags = local.tags
}
