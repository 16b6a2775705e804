"""Terminal, Markdown and JSON renderers: imports core and analysis."""
