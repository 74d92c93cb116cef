"""The systemd lane (issue 36): the package installed on a Debian 12 system booted with systemd
as PID 1 (packaging/systemd-lane/run: a cached debootstrap tree, the machine's Debian kernel
under qemu through virtme-ng --systemd), checked as an administrator would check it. The
guest runs every check once (packaging/systemd-lane/check); each test here reads one verdict."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from test_package import ROOT, deb  # noqa: F401  (the package, built once per run)

CHECKS = [
    "socket-enabled", "socket-file", "member-status", "stranger-refused", "daemon-user", "journal", "history", "web-starts",
    "web-root-controls", "web-stranger-refused", "mqtt-bridge", "reload", "stop", "security", "remove",
]


@pytest.fixture(scope="module")
def verdicts(deb: Path, tmp_path_factory) -> dict[str, str]:  # noqa: F811
    results = tmp_path_factory.mktemp("systemd-lane")
    run = subprocess.run([str(ROOT / "packaging/systemd-lane/run"), str(deb), str(results)],
                         capture_output=True, text=True, timeout=1500)
    print(run.stdout[-4000:], run.stderr[-4000:])
    found = {}
    for line in (results / "checks").read_text().splitlines() if (results / "checks").exists() else []:
        status, _, rest = line.partition(" ")
        name, _, text = rest.partition(": ")
        found[name] = f"{status}: {text}"
    if not found:
        pytest.fail(f"the systemd lane gave no verdict: {run.stderr[-3000:]}")
    return found


# Not judged in this guest, for what virtme-ng's init does before it starts systemd (made for a
# guest that shares the host's root: an overlay over /tmp, tmpfs over /var/tmp, /var/log,
# /var/cache, files bound over /etc/fstab and /etc/shadow). Measured here: ExecReload= exits
# 226/NAMESPACE (systemd cannot set the unit's namespace up again over those mounts) and
# journald keeps no file ("No journal files were found"). Reported as xfail, not hidden: the
# day they pass here, they show as xpass.
ENVIRONMENT = {
    "reload": "ExecReload= exits 226/NAMESPACE under virtme-ng's init mounts (SIGHUP itself: BlefleetdConfReloadTests)",
    "journal": "journald keeps no file under virtme-ng's init (the journal handler: SystemdTests)",
}


@pytest.mark.parametrize("check", [
    pytest.param(check, marks=pytest.mark.xfail(reason=ENVIRONMENT[check], strict=False)) if check in ENVIRONMENT else check
    for check in CHECKS
])
def test_under_a_real_systemd(verdicts, check):
    verdict = verdicts.get(check, "missing: the guest never ran this check")
    assert verdict.startswith("ok:"), f"{check}: {verdict}"
