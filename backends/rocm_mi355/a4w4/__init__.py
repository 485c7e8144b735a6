"""``aiter_mega_moe:gfx950_a4w4``."""
