"""The API's routers; each handler parses, calls one function, and returns a schema."""
