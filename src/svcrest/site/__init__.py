"""Pages outside the REST prefix: home, login/logout, nonce, discovery documents, static files."""
