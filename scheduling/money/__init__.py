"""Money: spend and commitments, holds against budgets, prices from the ledger, reports and the digest."""
