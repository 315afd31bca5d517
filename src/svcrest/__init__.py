"""svcrest: WordPress-style namespaced, self-describing REST APIs."""

REST_API_VERSION = "2.0"
