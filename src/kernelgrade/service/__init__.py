"""The HTTP API, the worker pool and the web pages."""
