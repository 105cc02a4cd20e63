"""Server-rendered web pages (Jinja2 templates, inline SVG plots, a little vanilla JavaScript)."""
