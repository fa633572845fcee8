"""Admissions of the simulated supervisor: callers invoking the catalog's deployments
and aliases, now and then resending a request (the store replays the receipt) or
reusing a key with another input (``IdempotencyConflict``); a retired deployment
(``DeploymentInactive``) or a full one (``AlreadyRunning``) refuses. Every refusal is
logged through the supervisor's ``failed``, never raised."""

from __future__ import annotations

import dataclasses
import json
import logging
import random
from collections import Counter, deque
from collections.abc import Callable

from storage import StorageError
from storage.routed.enums import AdmissionOutcome
from storage.routed.ids import WorkflowID
from storage.routed.records import InvocationRequest
from storage.routed.rules import RoutedRules, input_digest
from storage.routed.store import RoutedStore

from . import catalog

log = logging.getLogger("demo.simulate")


class Admissions:
    def __init__(
        self,
        routed: RoutedStore,
        seed: int,
        run: int,
        stats: Counter[str],
        rng: random.Random,
        id_rng: random.Random,
        failed: Callable[[str, StorageError], None],
    ) -> None:
        self.routed = routed
        self.seed, self.run = seed, run
        self.stats = stats
        self.rng, self.id_rng = rng, id_rng
        self.failed = failed
        self.sent: deque[InvocationRequest] = deque(maxlen=40)  # resent as replays
        self.admitted = 0

    def _hex(self) -> str:
        return f"{self.id_rng.getrandbits(128):032x}"

    def admit_some(self, first_tick: bool, live: set[WorkflowID]) -> None:
        """A few admissions while fewer than ``catalog.MAX_LIVE`` workflows are live:
        a burst on the first tick of a fresh store, so runs are there at once."""
        fresh = first_tick and not self.routed.view(lambda r: r.list_invocations())
        # The mean's whole part every tick and its fraction as a chance: at the
        # default 0.15 a Poisson draw would be one or none 99% of the time anyway.
        mean = catalog.ADMIT_MEAN
        count = int(mean) + int(self.rng.random() < mean - int(mean))
        count = catalog.BURST if fresh else count
        for _ in range(count):
            if len(live) >= catalog.MAX_LIVE:
                return
            self._admit_one(live)

    def _admit_one(self, live: set[WorkflowID]) -> None:
        draw = self.rng.random()
        if self.sent and draw < catalog.REPLAY_SHARE:
            request = self.rng.choice(self.sent)
            what = "replay"
        elif self.sent and draw < catalog.REPLAY_SHARE + catalog.CONFLICT_SHARE:
            prior = self.rng.choice(self.sent)
            text = json.dumps({"brief": "a different document", "n": self.admitted})
            request = dataclasses.replace(prior, input_json=text, input_digest=input_digest(text))
            what = "conflicting key"
        else:
            request = self._new_request()
            what = "admit"
        try:
            generation = self._deployment_generation(request.requested_deployment_ref)
            admission = self.routed.transact(lambda r: r.admit_invocation(request, generation))
        except StorageError as exc:
            self.failed(
                f"{what} {request.idempotency_key} ({request.requested_deployment_ref})", exc
            )
            return
        receipt = admission.receipt
        if admission.outcome is AdmissionOutcome.IDEMPOTENT_REPLAY:
            self.stats["routed_replayed"] += 1
            log.info(
                "routed replay of %s: receipt %s again",
                request.idempotency_key,
                receipt.invocation_id,
            )
            return
        self.stats["routed_admitted"] += 1
        self.sent.append(request)
        live.add(receipt.workflow_id)

    def _new_request(self) -> InvocationRequest:
        self.admitted += 1
        refs = catalog.REFS
        ref = self.rng.choices([r for r, _ in refs], [w for _, w in refs])[0]
        caller = self.rng.choice(catalog.CALLERS)
        tight = self.rng.random()
        kind = "expire" if tight < 0.09 else "budget" if tight < 0.18 else ""
        active_ms, spend = catalog.ceilings_for(kind, ref)
        text = json.dumps(
            {"brief": f"document {self.seed}.{self.run}.{self.admitted}", "ref": ref},
            sort_keys=True,
        )
        return InvocationRequest(
            requested_deployment_ref=ref,
            input_json=text,
            input_digest=input_digest(text),
            initial_max_active_duration_ms=active_ms,
            initial_attempt_lease_ms=catalog.LEASE_MS,
            initial_max_cost_usd_decimal=spend,
            creation_options_digest="sha256:demo-options",
            idempotency_key=f"req-{self._hex()[:16]}",
            caller_identity=caller,
        )

    def _deployment_generation(self, ref: str) -> int:
        def read_generation(r: RoutedRules) -> int:
            if ref.startswith("dep-"):
                return r.get_deployment(ref).generation  # type: ignore[arg-type]
            return r.get_deployment(r.resolve_alias(ref).record.target_deployment_id).generation

        return self.routed.view(read_generation)
