import time, threading, statistics
import pytest
from console import actions
from console.actions import do_bulk, new_token
from storage import Guard, Work
from storage.default import default_store
from storage.ops.manual import Action
from tests.console import factories as f
from tests.console.conftest import DB
pytestmark = DB

class Timed:
    def __init__(self, store):
        self.store, self.times = store, []
    def transact(self, guard, fn):
        t = time.perf_counter()
        try:
            return self.store.transact(guard, fn)
        finally:
            self.times.append(time.perf_counter() - t)
    def __getattr__(self, n):
        return getattr(self.store, n)

def test_measure(alice, monkeypatch):
    ids = [f"w{i:05d}" for i in range(10_000)]
    t0 = time.perf_counter()
    f.exhausted_many(ids)
    print("seed", time.perf_counter() - t0)
    pass
    store = Timed(default_store())
    stop = threading.Event()
    lat = []
    def writer():
        i = 0
        while not stop.is_set():
            t = time.perf_counter()
            default_store().transact(Guard(), lambda tx: tx.put_work(Work(id=f"c{i}", kind="billing.charge")))
            lat.append(time.perf_counter() - t)
            i += 1
            time.sleep(0.02)
    th = threading.Thread(target=writer); th.start()
    t0 = time.perf_counter()
    s = do_bulk(store, username="alice", action=Action.RETRY, work_ids=ids, reason="x", token=new_token(), progress=True)
    total = time.perf_counter() - t0
    stop.set(); th.join()
    print("bulk", total, "done", len(s.done), "tx", len(store.times), "max tx", max(store.times), "median", statistics.median(store.times))
    print("writer n", len(lat), "max", max(lat), "p50", statistics.median(lat))
    q = statistics.quantiles
    print("tx p95 p99", q(store.times, n=100)[94], q(store.times, n=100)[98], "over200", sum(t > .2 for t in store.times))
    print("writer p95 p99", q(lat, n=100)[94], q(lat, n=100)[98], "over200", sum(t > .2 for t in lat))
