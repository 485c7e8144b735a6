"""Engine integrations: launch plans and plug-ins (each engine's gates are in :mod:`moe_oracle.releases`)."""
