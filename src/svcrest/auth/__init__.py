"""Users, passwords, sessions, auth cookies, nonces and the REST cookie check."""
