"""HTTP building blocks: sans-I/O requests, responses, errors and headers."""
