# What gpubot reads. aws_instance waits until the instance runs, so ssh_host is known when the apply ends;
# `ready` is left out: gpubot counts the machine ready once ssh_host is set.

output "instance_id" {
  value = aws_instance.gpu.id
}

output "ssh_host" {
  value = aws_instance.gpu.public_ip != "" ? aws_instance.gpu.public_ip : aws_instance.gpu.private_ip
}

output "ssh_user" {
  value = "ubuntu"
}

output "ssh_port" {
  value = 22
}
