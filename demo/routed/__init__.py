"""The simulated routed-run supervisor of ``manage.py simulate`` (issue 18): a catalog
of deployments and aliases, a supervisor that admits invocations and drives their
workflows through the public routed-run store, its workers, and a simulated teammate
who uses the operators' control requests."""
