"""Console views, one module per area. Each view: decorators, one read or action,
then ``render`` or ``redirect``; htmx requests get the page's fragment."""
