"""Pure rules of gpubot on plain data: standard library only (and pydantic for the policy schema)."""
