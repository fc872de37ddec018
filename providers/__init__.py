"""Cloud adapters, one module per provider, all behind domain.ports.Provider."""
