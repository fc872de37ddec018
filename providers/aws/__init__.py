"""AWS EC2: GPU virtual machines through boto3."""
