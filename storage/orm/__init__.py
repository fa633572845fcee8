"""The Django ORM backend: ``OrmStore`` over SQLite or PostgreSQL.

- ``store``: open, ``transact``, ``view``, the writers' lock
- ``rows``: ``OrmTx``, the row hooks through the write-behind buffer
- ``reads``: Work queries, facets, Event scans, run rows, dashboard counts
- ``pages``: the keyset pages of Timers and active Waits (mixed into ``OrmTx``)
- ``writebehind``: what a transaction read and the writes it still owes
- ``schema``: the one table registry; ``dialect``: what differs per engine
- ``errors``: where driver errors become storage errors
"""

from .store import OrmStore

__all__ = ["OrmStore"]
