"""Cloud adapters, one package per provider kind (`providers/<kind>/`), all behind domain.ports.Provider."""
