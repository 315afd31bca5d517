"""The protocol adapters: ASGI and WSGI."""
