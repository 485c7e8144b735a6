"""``aiter_mega_moe:gfx950_a8w4``."""
