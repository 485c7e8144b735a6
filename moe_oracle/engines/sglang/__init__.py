"""SGLang integration: gates of SGLang 0.5.23 and launch plans."""
