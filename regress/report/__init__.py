"""The static site: derived data, pages, templates: imports core, storage, analysis, output."""
