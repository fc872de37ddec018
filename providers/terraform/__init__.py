"""The `terraform` provider kind: a team-owned Terraform module, one state per booking."""
