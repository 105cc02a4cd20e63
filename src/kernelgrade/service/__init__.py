"""The HTTP service: the API, its schemas, authentication and the web pages. It runs no grading."""
