"""Units, numbers and terminal/Markdown/JSON renderers: imports core and analysis."""
