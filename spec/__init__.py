"""groupspec."""
