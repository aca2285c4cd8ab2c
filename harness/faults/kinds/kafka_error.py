"""kafka-error: Kafka's own failures rather than a broken connection, on one link (a streamlet's, or the generator's):
for `duration_s`, a `share` of one api's requests (at most `count`; 0: no limit) reach the broker and are handled, and
their response is dropped, the connection then reset (the client retries a request the broker had done: a duplicate,
unless its producer is idempotent), or held `delay_ms` (and every response after it on that connection), or the request
itself held `delay_ms` on its way (`delay-request`: an EndTxn held keeps its transaction's markers unwritten); or, for
produce, answered `error_code` instead of appending (`error-response`: the broker is sent the request unroutable) or
after appending (`error-after-append`, as a broker whose followers fell behind answers 20,
NOT_ENOUGH_REPLICAS_AFTER_APPEND). The network proxy reads each request's header as it passes (harness/network/wire.py)
and logs each one it acts on, with what a produce request carried (each partition's batches: records, crc, producer id
and sequence) and what the broker answered, in kafka-requests.jsonl. Listeners that speak TLS cannot be read: refused
when the scenario is read.
"""

from __future__ import annotations

from harness.errors import HarnessError
from harness.faults.kind import Param
from harness.faults.network import impair_link, network_kind
from harness.network.kafka_wire import APIS
from harness.network.wire import ACTIONS, DELAYING, DROP, PRODUCE_ONLY


def kafka_error(
    run,
    target: str,
    api: str,
    action: str,
    share: float,
    count: int,
    delay_ms: float,
    error_code: int,
    duration_s: float,
) -> None:
    if run.network is not None and target in run.network.links and not run.network.reads_wire(target):
        raise HarnessError(f"{KIND.name}: the link {target!r} was not proxied as Kafka's frames from the run's start")
    rule = {"api": api, "action": action, "share": share, "count": count, "delay_ms": delay_ms}
    impair_link(run, KIND, target, duration_s, kafka=rule | {"error_code": error_code})


def _clash(params: dict) -> tuple[str, str] | None:
    if params["action"] in DELAYING and not params["delay_ms"]:
        return "delay_ms", f"{params['action']} holds each one delay_ms: give it"
    if params["action"] in PRODUCE_ONLY and params["api"] != "produce":
        return "api", f"{params['action']} rewrites a produce request's answer: api must be produce"
    return None


KIND = network_kind(
    "kafka-error",
    kafka_error,
    {
        "api": Param(str, "produce", choices=tuple(APIS)),
        "action": Param(str, DROP, choices=ACTIONS),
        "share": Param((int, float), 1.0, minimum=0, maximum=1),
        "count": Param(int, 0, minimum=0),
        "delay_ms": Param((int, float), 0.0, minimum=0),
        "error_code": Param(int, 6, minimum=-1, maximum=200),
    },
    help="drop (then reset the connection) or delay the broker's responses to a share of one api's requests on a "
    "link, after the broker handled them, or answer produce requests error_code (6: NOT_LEADER_OR_FOLLOWER) instead "
    "of appending or after it; each one acted on is logged in kafka-requests.jsonl",
    draw=lambda rng: {"share": round(rng.uniform(0.05, 0.3), 2)},
    wire=True,
    check=_clash,
)
