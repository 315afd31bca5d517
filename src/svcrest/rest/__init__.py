"""The REST layer: routing, argument schemas, the one dispatch pipeline and its default filters."""
