"""The team pool: machines the team owns or rents by the month, listed in the policy."""
