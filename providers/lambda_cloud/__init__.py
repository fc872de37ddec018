"""Lambda (cloud.lambda.ai): GPU virtual machines through its public cloud API."""
