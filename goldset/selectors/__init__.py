"""Reads, one module per area. ``get_*_for(user=…)`` fetch and authorize in one call (404)."""
