"""Support code of the whole suite (never a test module): the test database's template."""
