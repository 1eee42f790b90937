"""Tools around the notebooks: run them headless, export slides, the teachers'
table, and regenerate the figures."""
