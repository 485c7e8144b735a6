"""vLLM integration: gates of vLLM 0.33, launch plans, the general plug-in."""
