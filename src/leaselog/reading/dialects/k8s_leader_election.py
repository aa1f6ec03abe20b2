"""Kubernetes leader election (client-go `tools/leaderelection`), in klog text, structured klog and JSON.

Sources, kubernetes/client-go `tools/leaderelection/leaderelection.go`:
- v0.20.0 to v0.34.x (printf, `klog.Infof`): `"attempting to acquire leader lease %v..."` (v0.15 and
  earlier: two spaces before `%v`), `"successfully acquired lease %v"`, V(4) `"failed to acquire lease
  %v"`, V(5) `"successfully renewed lease %v"`, `"failed to renew lease %v: %v"`, V(4) `"lock is held by
  %v and has not yet expired"` (v0.31+: `...: %v` with the lock), `klog.Errorf("Failed to release lock:
  %v")`.
- v0.35.0 and later (structured, `logger.Info(msg, "lock", desc)`): `"Attempting to acquire leader
  lease..."`, `"Successfully acquired lease"`, V(4) `"Failed to acquire lease"`, V(5) `"Successfully
  renewed lease"`, `"Failed to renew lease"` (with `err`), V(4) `"Lease is held by and has not yet
  expired"` (with `holder`), `"Failed to release lease"`. The lock (`namespace/name`) is a `lock=` pair
  in klog text and a `"lock"` key in JSON (k8s.io/component-base/logs/json: `ts` epoch milliseconds,
  `caller`, `msg`, `v`).
- Leadership lost is logged by the caller's `OnStoppedLeading` callback, not client-go: kubernetes
  `cmd/kube-controller-manager` `logger.Error(nil, "leaderelection lost")`, the common `klog.Fatalf("leader
  election lost")`, client-go's `examples/leader-election/main.go` `"Leader lost"` and `OnNewLeader`
  `"New leader elected"` / `"new leader elected: %s"` (older example). These name no lock: they take
  the lease last named in the same file (`Rule.job_from_thread`; klog lines have no thread).

The lease name (`namespace/name`) is the job; the pod is the file's (one file per replica, as `kubectl
logs` gives). "Attempting to acquire" is a candidate's poll of the lock (client-go retries every
RetryPeriod): `job_triggered` with trigger `poll`. Leadership lost ends the leader's run (`job_stopped`):
the process stops acting then, or exits.

client-go logs no lease duration and, at the default verbosity, no renewal: pass `--lease-ttl`
(the LeaseDuration); even then a leader's renewals are invisible below `-v=5`, so how long its lease
stayed valid cannot be measured, only what happened around a takeover (the new leader acquired only
after the old one had failed to renew for a whole LeaseDuration, by its own clock).
"""

from __future__ import annotations

from dataclasses import replace

from leaselog.reading.dialects import Dialect, Rule, Sample

NAME = "k8s-leader-election"

_LOCK = {"job_id": ("lock",)}
_HOLDER = {"owner": ("holder",)}

_RULES = (
    # printf (v0.15 .. v0.34)
    Rule(
        "job_triggered",
        r"\Aattempting to acquire leader lease +(?P<job_id>\S+?)\.\.\.",
        {"trigger": "poll"},
        versions="v0.15-v0.34",
    ),
    Rule("lock_acquired", r"\Asuccessfully acquired lease (?P<job_id>\S+)", versions="v0.15-v0.34"),
    Rule("lock_denied", r"\Afailed to acquire lease (?P<job_id>\S+)", versions="v0.15-v0.34 (-v=4)"),
    Rule(
        "lock_denied",
        r"\Alock is held by (?P<owner>\S+) and has not yet expired(?:: (?P<job_id>\S+))?",
        versions="v0.15-v0.34 (-v=4)",
        job_from_thread=True,
    ),
    Rule(
        "lease_renewal",
        r"\Asuccessfully renewed lease (?P<job_id>\S+)",
        {"renewal_outcome": "success"},
        versions="v0.15-v0.34 (-v=5)",
    ),
    Rule(
        "lease_renewal",
        r"\Afailed to renew lease (?P<job_id>\S+?): (?P<reason>.*)",
        {"renewal_outcome": "timeout"},
        versions="v0.15-v0.34",
    ),
    # structured (v0.35+): the lock is a `lock` key beside the message
    Rule(
        "job_triggered",
        r"\AAttempting to acquire leader lease\.\.\.",
        {"trigger": "poll"},
        versions="v0.35+",
        keys=_LOCK,
    ),
    Rule("lock_acquired", r"\ASuccessfully acquired lease\Z", versions="v0.35+", keys=_LOCK),
    Rule("lock_denied", r"\AFailed to acquire lease\Z", versions="v0.35+ (-v=4)", keys=_LOCK),
    Rule(
        "lock_denied",
        r"\ALease is held by and has not yet expired",
        versions="v0.35+ (-v=4)",
        keys={**_LOCK, **_HOLDER},
    ),
    Rule(
        "lease_renewal",
        r"\ASuccessfully renewed lease\Z",
        {"renewal_outcome": "success"},
        versions="v0.35+ (-v=5)",
        keys=_LOCK,
    ),
    Rule(
        "lease_renewal",
        r"\AFailed to renew lease\Z",
        {"renewal_outcome": "timeout"},
        versions="v0.35+",
        keys={**_LOCK, "reason": ("err",)},
    ),
    # the callers' OnStoppedLeading / OnNewLeader (no lock named: see `join`)
    Rule(
        "job_stopped",
        r"\A(?:leaderelection lost|[Ll]eader election lost|Leader lost|Leaderelection lost)",
        {"reason": "leadership_lost"},
        job_from_thread=True,
    ),
)
# each rule's name: the event's `raw_event` is `<dialect>/<name>`
RULES = tuple(
    replace(r, name=n)
    for r, n in zip(
        _RULES,
        (
            "attempting",
            "acquired",
            "failed-to-acquire",
            "held-by",
            "renewed",
            "failed-to-renew",
            "attempting-s",
            "acquired-s",
            "failed-to-acquire-s",
            "held-by-s",
            "renewed-s",
            "failed-to-renew-s",
            "leadership-lost",
        ),
        strict=True,
    )
)

SAMPLES = (
    Sample(
        "I1201 10:00:00.123456       1 leaderelection.go:250] attempting to acquire leader lease "
        "kube-system/report-controller...",
        "job_triggered",
        {"job_id": "kube-system/report-controller", "trigger": "poll"},
    ),
    Sample(
        "I1201 10:00:00.223456       1 leaderelection.go:260] successfully acquired lease "
        "kube-system/report-controller",
        "lock_acquired",
        {"job_id": "kube-system/report-controller"},
    ),
    Sample(
        "I1201 10:00:31.000000       1 leaderelection.go:285] failed to renew lease "
        "kube-system/report-controller: timed out waiting for the condition",
        "lease_renewal",
        {"job_id": "kube-system/report-controller", "renewal_outcome": "timeout"},
    ),
    Sample(
        'E1201 10:00:31.000100       1 controllermanager.go:368] "leaderelection lost"',
        "job_stopped",
        {"reason": "leadership_lost", "job_id": "kube-system/report-controller"},
        before=(
            "I1201 10:00:00.223456       1 leaderelection.go:260] successfully acquired lease "
            "kube-system/report-controller",
        ),
    ),
    Sample(
        'I1201 10:00:00.223456       1 leaderelection.go:272] "Successfully acquired lease" '
        'lock="kube-system/report-controller"',
        "lock_acquired",
        {"job_id": "kube-system/report-controller"},
    ),
    Sample(
        '{"ts":1796119200223.456,"caller":"leaderelection/leaderelection.go:258","msg":"Attempting to '
        'acquire leader lease...","v":0,"lock":"kube-system/report-controller"}',
        "job_triggered",
        {"job_id": "kube-system/report-controller"},
    ),
    Sample(
        "I1201 10:00:05.000000       1 leaderelection.go:354] lock is held by report-controller-7d9f "
        "and has not yet expired",
        "lock_denied",
        {"owner": "report-controller-7d9f", "job_id": "kube-system/report-controller"},
        before=(
            "I1201 10:00:00.123456       1 leaderelection.go:250] attempting to acquire leader lease "
            "kube-system/report-controller...",
        ),
    ),
    Sample('I1201 10:00:05.000000       1 main.go:170] "New leader elected" identity="pod-b"', None),
    Sample(
        "I1201 10:00:02.000000       1 leaderelection.go:255] failed to acquire lease "
        "kube-system/report-controller",
        "lock_denied",
        {"job_id": "kube-system/report-controller"},
    ),
    Sample(
        "I1201 10:00:02.000000       1 leaderelection.go:281] successfully renewed lease "
        "kube-system/report-controller",
        "lease_renewal",
        {"job_id": "kube-system/report-controller", "renewal_outcome": "success"},
    ),
    Sample(
        'I1201 10:00:02.000000       1 leaderelection.go:267] "Failed to acquire lease" '
        'lock="kube-system/report-controller"',
        "lock_denied",
        {"job_id": "kube-system/report-controller"},
    ),
    Sample(
        'I1201 10:00:02.000000       1 leaderelection.go:493] "Lease is held by and has not yet expired" '
        'lock="kube-system/report-controller" holder="report-controller-7d9f"',
        "lock_denied",
        {"job_id": "kube-system/report-controller", "owner": "report-controller-7d9f"},
    ),
    Sample(
        'I1201 10:00:02.000000       1 leaderelection.go:300] "Successfully renewed lease" '
        'lock="kube-system/report-controller"',
        "lease_renewal",
        {"job_id": "kube-system/report-controller", "renewal_outcome": "success"},
    ),
    Sample(
        'I1201 10:00:31.000000       1 leaderelection.go:304] "Failed to renew lease" '
        'lock="kube-system/report-controller" err="timed out waiting for the condition"',
        "lease_renewal",
        {"job_id": "kube-system/report-controller", "renewal_outcome": "timeout"},
    ),
)


DIALECT = Dialect(
    name=NAME,
    library="Kubernetes leader election (k8s.io/client-go/tools/leaderelection)",
    sources=(
        "kubernetes/client-go v0.34.0 tools/leaderelection/leaderelection.go (printf wording)",
        "kubernetes/client-go v0.35.0 tools/leaderelection/leaderelection.go (structured wording)",
        "kubernetes/client-go examples/leader-election/main.go; kubernetes cmd/kube-controller-manager "
        "(leadership lost, by the callers)",
    ),
    needles=(
        "leader lease",
        "acquired lease",
        "acquire lease",
        "renew lease",
        "renewed lease",
        "held by",
        "eaderelection lost",
        "eader election lost",
        "Leader lost",
    ),
    rules=RULES,
    samples=SAMPLES,
    loggers=("leaderelection.go",),
    advice=(
        "client-go logs no lease duration: pass --lease-ttl with the LeaseDuration (15s by default in "
        "kube-controller-manager). Renewals are logged only at -v=5 and denials at -v=4; at the default "
        "verbosity a leader's lease validity after its acquisition cannot be measured, only the takeover."
    ),
    cannot_measure=(
        "the lease duration (never logged: pass --lease-ttl) and, below -v=5, the renewals: how long a "
        "leader's lease stayed valid, other than around a takeover"
    ),
    enable="run the component with -v=5 to log renewals (-v=4 for denials)",
    silent_renewals=True,  # `successfully renewed lease` is V(5)
    holds_until_lost=True,  # the leader acts until OnStoppedLeading (most callers exit there)
)
