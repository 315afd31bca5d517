"""Route registration, normalisation and the compiled matcher."""
