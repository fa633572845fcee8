"""Helpers shared by the SQLite and PostgreSQL backup tests: publishing and attaching
artifacts, running the backup command, and the child-process bodies."""

from __future__ import annotations

import io
from pathlib import Path

from django.core.management import call_command

from storage import ArtifactRef, Execution, Guard, Tx, Work
from storage.artifacts import FileArtifactStore
from storage.orm import OrmStore


def publish(store: FileArtifactStore, body: bytes) -> ArtifactRef:
    with store.create("text/plain") as writer:
        writer.write(body)
        return writer.commit()


def attach(work_id: str, execution_id: str, *refs: ArtifactRef, lease_ttl: int = 0) -> None:
    """A Work with one attempt carrying ``refs``; claimed when ``lease_ttl``."""

    def fn(tx: Tx) -> None:
        tx.put_work(Work(id=work_id, kind="backup.test"))
        tx.put_execution(Execution(id=execution_id, work_id=work_id, attempt=1, artifacts=refs))
        if lease_ttl:
            tx.claim(execution_id, "host-a", tx.now + lease_ttl)

    OrmStore().transact(Guard(), fn)


def backup(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("backup", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def small_bundle(tmp_path: Path, artifacts: FileArtifactStore) -> tuple[Path, ArtifactRef]:
    ref = publish(artifacts, b"build log\n" * 100)
    attach("w1", "x1", ref)
    bundle = tmp_path / "bundle"
    backup("create", str(bundle))
    return bundle, ref


WRITER = """
from django.conf import settings
from storage.run_records import DurableRunRecord
from storage.artifacts import FileArtifactStore
stop = Path(sys.argv[1])
artifacts = FileArtifactStore(settings.ARTIFACT_DIR)
store = OrmStore()

def step(tx, ref):
    try:
        n = int(tx.kv_get("backup", "counter")) + 1
    except NotFound:
        n = 1
    # One transaction: a Work, its attempt with its artifact, the counter.
    tx.put_work(Work(id=f"bw-{n}", kind="backup.writer"))
    tx.put_execution(Execution(id=f"bx-{n}", work_id=f"bw-{n}", attempt=1, artifacts=(ref,)))
    tx.kv_put("backup", "counter", str(n).encode())
    # The run record is in the same snapshot: at revision n, saying n.
    tx.put_run_record(DurableRunRecord(run_id="backup-run", version=str(n)), n - 1)
    return n

while not stop.exists():
    with artifacts.create("text/plain") as writer:  # published before it is attached
        writer.write(os.urandom(2048))
        ref = writer.commit()
    n = store.transact(Guard(), lambda tx: step(tx, ref))
    sys.stdout.write(f"{n}\\n")
    sys.stdout.flush()
"""


AFTER_RESTORE = """
lease = LeaseRef(*json.loads(sys.argv[1]))
store = OrmStore()
def renew(tx):
    tx.renew(lease, tx.now + seconds(60))
try:
    store.transact(Guard(lease=lease), renew)
    stale = "committed"
except Fenced:
    stale = "fenced"
x = store.transact(Guard(), lambda tx: tx.claim("x1", "host-b", tx.now + seconds(30)))
print(json.dumps({"stale": stale, "owner": x.owner, "epoch": x.epoch}))
"""


RUN_RECORDS = "SELECT run_id, revision, data FROM conduit_run_record"


def assert_run_record(rows: list[tuple[object, ...]], n: int) -> None:
    """The restored ``conduit_run_record`` rows (run_id, revision, data) hold the
    writer's run at revision ``n``, as in the same snapshot as its counter."""
    from storage.run_records import decode

    assert [(run_id, str(revision)) for run_id, revision, _ in rows] == [("backup-run", str(n))]
    record = decode(bytes(rows[0][2]))  # type: ignore[arg-type]
    assert (record.run_id, record.revision, record.version) == ("backup-run", n, str(n))
