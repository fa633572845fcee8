"""Demo data for Conduit Console: a simulated runtime (``manage.py simulate``) and a bulk
history generator (``manage.py generate``), both writing only through the public
storage API."""
