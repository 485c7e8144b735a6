"""Engine integrations: each engine's own gates, fallbacks, launch plans and plug-ins."""
