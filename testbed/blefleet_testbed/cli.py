"""`scripts/testbed`: start, inspect, disturb and stop a BLE testbed.

stdout carries only results (the `export` lines of `start`, the JSON of `state`);
progress and errors go to stderr, errors as one sentence with a non-zero exit."""

from __future__ import annotations

import argparse
import json
import os
import select
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import profile
from .rundir import (CONTROL_SOCKET, CREATED_MARK, MGMT_SOCKET, PIDS_FILE, RunDir, TestbedError, is_alive,
                     terminate_recorded, wait_gone)

START_TIMEOUT = 120.0
REAL_START_TIMEOUT = 420.0   # a private VM boots first (TCG: 30-60 s, more under load)
VM_LEASE_WAIT = 1800.0       # a shared VM serves one testbed at a time; others queue
COMMAND_TIMEOUT = 120.0


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        sys.stderr.write(f"testbed: {message}\n")
        sys.exit(2)


def _nonnegative(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"'{text}' must not be negative")
        return value
    return parse


def _positive(kind):
    def parse(text: str):
        value = _nonnegative(kind)(text)
        if value == 0:
            raise argparse.ArgumentTypeError(f"'{text}' must be above zero")
        return value
    return parse


def _board_count(text: str) -> int:
    value = _positive(int)(text)
    if value > profile.MAX_BOARDS:
        raise argparse.ArgumentTypeError(f"at most {profile.MAX_BOARDS} boards are supported")
    return value


def _pattern(text: str) -> str:
    try:
        profile.TemperaturePattern.parse(text)
    except profile.PatternError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _celsius(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number of degrees Celsius") from None
    if not profile.MIN_CELSIUS <= value <= profile.MAX_CELSIUS:
        raise argparse.ArgumentTypeError(f"{value} °C is outside what one signed byte holds (-128…127)")
    return value


def _central_count(text: str) -> int:
    value = _positive(int)(text)
    if value > profile.MAX_CENTRALS:
        raise argparse.ArgumentTypeError(f"at most {profile.MAX_CENTRALS} central adapters are supported")
    return value


def _rssi(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number of dBm") from None
    if not -127 <= value <= 20:
        raise argparse.ArgumentTypeError(f"{value} dBm is not a signal a controller reports (-127…20)")
    return value


def _hci_status(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an HCI status (hex, e.g. 0x3e)") from None
    if value == 0:
        raise argparse.ArgumentTypeError("0x00 is success, not a failure")
    if not 0 < value <= 0xFF:
        raise argparse.ArgumentTypeError(f"'{text}' is not an HCI status (one byte, 0x01…0xff)")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a fraction (0…1)") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not a fraction (0…1)")
    return value


def _delay(text: str) -> float:
    """1500ms, 1.5s (or 0): seconds."""
    if text.endswith("ms"):
        number, unit = text[:-2], 0.001
    elif text.endswith("s"):
        number, unit = text[:-1], 1.0
    else:
        number, unit = text, None
    try:
        value = float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a delay (e.g. 1500ms or 1.5s)") from None
    if unit is None:
        if value != 0:
            raise argparse.ArgumentTypeError(f"'{text}' needs a unit: {text}ms or {text}s")
        unit = 1.0
    if value < 0 or value * unit > 60:
        raise argparse.ArgumentTypeError(f"'{text}' is not a delay between 0 and 60 s")
    return value * unit


def add_start_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--boards", type=_board_count, default=5, help="number of boards (default 5)")
    p.add_argument("--centrals", type=_central_count, default=1,
                   help="central adapters the gateway has: hci0, hci1, ... (default 1); the boards' "
                        "adapters follow them")
    p.add_argument("--latency-ms", type=_nonnegative(float), default=0.0,
                   help="added latency per radio operation (connect, read, write, subscribe)")
    p.add_argument("--jitter-ms", type=_nonnegative(float), default=0.0, help="± random jitter on that latency")
    p.add_argument("--temperature", type=_pattern, default="21",
                   help="N | constant:N | distinct[:BASE] | ramp[:LO:HI] | random[:LO:HI] (default 21)")
    p.add_argument("--humidity", action="store_true",
                   help="the boards run a lab's variant of the sketch that also offers relative humidity "
                        "(uint16, 0.01 %%RH, read + notify) in the sensor service")
    p.add_argument("--encrypted", action="store_true",
                   help="the last board also offers a characteristic readable only over an encrypted link "
                        "(flags encrypt-read): a central pairs first")
    p.add_argument("--notify-interval", type=_positive(float), default=1.0,
                   help="seconds between sensor refreshes / notifications (default 1)")
    p.add_argument("--owner-pid", type=_nonnegative(int), default=0,
                   help="tear the testbed down when this process exits")
    p.add_argument("--temporary-timeout", type=_nonnegative(float), default=30.0,
                   help="BlueZ TemporaryTimeout: seconds an unconnected device stays after it was last seen (0 = never expire)")
    p.add_argument("--connect-timeout", type=_positive(float), default=2.0,
                   help="seconds a Connect to an absent board tries before le-connection-abort-by-local")
    p.add_argument("--scan-interval", type=_positive(float), default=1.0,
                   help="seconds between the emulated controller's advertising reports while discovering")
    p.add_argument("--advertise-while-connected", action="store_true",
                   help="boards keep advertising while connected (the Nano sketch stops, as BLE "
                        "controllers do on a connection; some peripherals advertise on)")
    p.add_argument("--stock-bluezoo", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--real", action="store_true",
                   help="real BlueZ: bluetoothd and the kernel's Bluetooth stack in a VM with virtual LE "
                        "controllers (uses the VM of --vm or $BLEFLEET_TESTBED_VM, else boots one, ~1 min); "
                        "also exports BLEFLEET_MGMT_SOCKET, a Unix socket to the VM kernel's Bluetooth "
                        "management interface (what btmgmt speaks; one control channel per connection)")
    p.add_argument("--vm", help="with --real: the directory of a running testbed VM (`testbed vm start`)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="testbed", description="BLE testbed: private D-Bus + BlueZoo + simulated boards")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def with_run_dir(p):
        p.add_argument("--run-dir", help="the testbed's run directory (default $BLEFLEET_TESTBED_RUN_DIR)")
        return p

    add_start_options(with_run_dir(sub.add_parser("start", help="start a testbed")))
    with_run_dir(sub.add_parser("state", help="print the boards' state as JSON"))
    with_run_dir(sub.add_parser("stop", help="stop the testbed and remove its run state"))

    board = sub.add_parser("board", help="disturb boards").add_subparsers(
        dest="action", required=True, parser_class=Parser)
    for action, text in (("drop", "board powers off"), ("restore", "board powers on again"),
                         ("reset", "board reboots: disconnects, LED off")):
        p = with_run_dir(board.add_parser(action, help=text))
        p.add_argument("name", help="nano-NN or all" if action != "reset" else "nano-NN or all")
    p = with_run_dir(board.add_parser("temp", help="set the temperature a board measures"))
    p.add_argument("name")
    p.add_argument("celsius", type=_celsius)
    p = with_run_dir(board.add_parser(
        "signal", help="set the RSSI a central adapter hears a board with (in its next advertising reports)"))
    p.add_argument("name", help="nano-NN or all")
    p.add_argument("rssi", type=_rssi, help="dBm, e.g. -45 (near) or -90 (far)")
    p.add_argument("--adapter", help="the central adapter (default hci0)")

    bluez = sub.add_parser("bluez", help="disturb BlueZ").add_subparsers(
        dest="action", required=True, parser_class=Parser)
    restart = with_run_dir(bluez.add_parser("restart", help="org.bluez vanishes and returns"))
    restart.add_argument("--crash", action="store_true",
                         help="it is killed (as when it segfaults) instead of stopped: no cleanup; "
                              "on the real lane its controllers stay powered and the kernel keeps the links")
    p = with_run_dir(bluez.add_parser(
        "segfault", help="real lane: bluetoothd dies of SIGSEGV, as 5.66 does by itself under faults; "
                         "it is restarted, the crash counted (`state`: bluez_crashes) and marked as asked "
                         "for, the boards registered again"))
    p.add_argument("--unasked", action="store_true",
                   help="not marked as asked for, as if bluetoothd died by itself: the tests' harness fails "
                        "the test it happened in (to prove that it does)")
    with_run_dir(bluez.add_parser(
        "wait", help="wait until bluetoothd runs and the boards are registered with it (after a crash "
                     "the real lane restarts it and registers them again); fails if it does not come back"))

    adapter = sub.add_parser("adapter", help="power a central adapter, plug one in or pull it out").add_subparsers(
        dest="action", required=True, parser_class=Parser)
    for action in ("off", "on"):
        p = with_run_dir(adapter.add_parser(action, help=f"power a central adapter {action}"))
        p.add_argument("name", nargs="?", help="hci0 (default), hci1, ...")
    with_run_dir(adapter.add_parser("plug", help="one more central adapter appears; prints its name"))
    with_run_dir(adapter.add_parser("unplug", help="the plugged-in adapter vanishes"))

    fault = sub.add_parser(
        "fault", help="radio faults: connects that fail or are slow, links lost, a controller that hangs",
        description="Inject radio faults. The real lane's patched btvirt injects them all in the "
                    "controllers (HCI statuses, supervision timeouts, unanswered commands); BlueZoo "
                    "those it can express (connect, drop, slow). They last until `fault clear` or the "
                    "testbed stops.").add_subparsers(dest="action", required=True, parser_class=Parser)
    p = with_run_dir(fault.add_parser(
        "connect", help="the next connects to a board fail with an HCI status",
        description="The next K (--count K, default 1) connect attempts to BOARD (central → board) "
                    "fail with HCI status STATUS (0x3e: connection failed to be established, 0x3d: MIC "
                    "failure, 0x08: connection timeout, ...), or a fraction R of them at random "
                    "(seeded): the link comes up and is lost a second later, the status the reason "
                    "of the disconnection at both ends (Device1.Connect answers, then Connected turns "
                    "false; the only way Debian 12's kernel and bluetoothd 5.66 survive, see the btvirt "
                    "patch). A new `fault connect` for the board replaces the last; --count 0 or "
                    "--rate 0 ends it."))
    p.add_argument("name", metavar="BOARD", help="nano-NN or all")
    p.add_argument("status", metavar="STATUS", type=_hci_status, help="the HCI status, e.g. 0x3e")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--count", type=_nonnegative(int), help="this many connects fail (default 1)")
    how.add_argument("--rate", type=_rate, help="each connect fails with this probability (0…1)")
    p.add_argument("--seed", type=_nonnegative(int), help="with --rate: the random sequence (default 0)")
    p = with_run_dir(fault.add_parser(
        "drop", help="a board's live link is lost now (supervision timeout)",
        description="BOARD's live link is lost now: a supervision timeout (0x08) at both ends (a link "
                    "younger than a second when it is a second old). On the real lane, as over the air: "
                    "the link goes silent first (nothing crosses it) and ends 420 ms later, Linux's LE "
                    "supervision timeout; BlueZoo ends it at once. The "
                    "board stays powered and advertising, so it can be connected again. With --every, "
                    "again and again at random intervals of half to one and a half times SECONDS "
                    "(seeded); --every 0 stops that."))
    p.add_argument("name", metavar="BOARD", help="nano-NN or all")
    p.add_argument("--every", type=_nonnegative(float), metavar="SECONDS",
                   help="drop its link at random intervals averaging SECONDS")
    p.add_argument("--seed", type=_nonnegative(int), help="with --every: the random sequence (default 0)")
    p = with_run_dir(fault.add_parser(
        "slow", help="connects to a board take longer to complete",
        description="Connects to BOARD take DELAY longer to complete (e.g. 1500ms or 1.5s; 0 ends it). "
                    "Cancelling one meanwhile (Device1.Disconnect) ends it."))
    p.add_argument("name", metavar="BOARD", help="nano-NN or all")
    p.add_argument("delay", metavar="DELAY", type=_delay, help="1500ms, 1.5s, ...")
    p = with_run_dir(fault.add_parser(
        "hang", help="a central controller stops answering (real lane only)",
        description="Central controller ADAPTER (hci0, hci1, ...) stops answering HCI commands (the "
                    "kernel's commands to it time out) and delivers nothing (no advertising reports, "
                    "no data); its links end at the boards with a supervision timeout. For SECONDS "
                    "(then it reports those links lost), or until its host resets it (HCI_Reset: "
                    "powering it off and on, through BlueZ or the kernel's management interface). "
                    "With --links-live its transport stalls instead while its link layer goes on (a USB "
                    "dongle whose transport hangs): its links stay up at the boards, which do not "
                    "advertise, until the reset ends them there. "
                    "The real lane's alone: BlueZoo has no controller."))
    p.add_argument("adapter", metavar="ADAPTER", help="hci0, hci1, ...")
    p.add_argument("--links-live", action="store_true",
                   help="its links live on at the boards until it is reset (a stalled transport)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--for", dest="seconds", type=_positive(float), metavar="SECONDS",
                     help="hang this long")
    how.add_argument("--until-reset", action="store_true", help="hang until an HCI_Reset (the default)")
    with_run_dir(fault.add_parser("clear", help="every fault off (a hung controller answers again)"))

    with_run_dir(sub.add_parser(
        "watch-links", help="referee: watch the bus as a D-Bus monitor; prints `watching`, then at SIGTERM "
                            "one JSON object: per adapter the Connect calls, the most links at once and the "
                            "most links and pending connects when a Connect was called"))

    vm = sub.add_parser("vm", help="a VM for the --real lane, booted once for many testbeds").add_subparsers(
        dest="action", required=True, parser_class=Parser)
    p = vm.add_parser("start", help="boot a VM and print `export BLEFLEET_TESTBED_VM=...`")
    p.add_argument("--vm-dir", help="where its state lives (default: a new directory under /tmp)")
    p.add_argument("--boards", type=_board_count, default=20, help="board controllers (default 20)")
    p.add_argument("--centrals", type=_positive(int), default=3, help="central controllers (default 3)")
    p.add_argument("--owner-pid", type=_nonnegative(int), default=0, help="stop the VM when this process exits")
    p = vm.add_parser("stop", help="stop a VM")
    p.add_argument("--vm-dir", help="default $BLEFLEET_TESTBED_VM")
    p = vm.add_parser(
        "crashes", help="the VM's bluetoothd crashes, each with its last log lines and its core's backtrace",
        description="Every death of the VM's bluetoothd that its supervisor wrote down, one paragraph each: "
                    "the line (time, pid, signal, the kernel's line, the core), bluetoothd's last log lines "
                    "before it, and the backtrace of its core. Exit status 0; 1 with --fail-unasked when "
                    "one of them was not asked for (the tests' harness uses it).")
    p.add_argument("--vm-dir", help="default $BLEFLEET_TESTBED_VM")
    p.add_argument("--since", type=_nonnegative(int), default=0, metavar="N",
                   help="leave out the first N lines (those written before a test began)")
    p.add_argument("--unasked", action="store_true", help="only those no test asked for")
    p.add_argument("--fail-unasked", action="store_true", help="exit status 1 when one was not asked for")

    ctl = sub.add_parser("_controller")
    ctl.add_argument("--run-dir", required=True)
    ctl.add_argument("--ready-fd", type=int, required=True)
    add_start_options(ctl)
    keeper = sub.add_parser("_vm_keeper")
    keeper.add_argument("--vm-dir", required=True)
    keeper.add_argument("--ready-fd", type=int, required=True)
    keeper.add_argument("--centrals", type=int, required=True)
    keeper.add_argument("--boards", type=int, required=True)
    keeper.add_argument("--owner-pid", type=int, default=0)
    keeper.add_argument("--boot-timeout", type=float, required=True)
    bridge = sub.add_parser("_bridge")
    bridge.add_argument("--listen", required=True, action="append", help="a Unix socket (repeatable)")
    bridge.add_argument("--port", type=int, required=True, action="append",
                        help="the forwarded TCP port of the --listen before it")
    return parser


def resolve_run_dir(args) -> RunDir:
    path = args.run_dir or os.environ.get("BLEFLEET_TESTBED_RUN_DIR")
    if not path:
        raise TestbedError("no testbed run directory: pass --run-dir or set BLEFLEET_TESTBED_RUN_DIR")
    return RunDir(Path(path).resolve())


# -- start / stop ---------------------------------------------------------------------

def start(args) -> int:
    if args.owner_pid and not Path(f"/proc/{args.owner_pid}").exists():
        raise TestbedError(f"owner process {args.owner_pid} does not exist")
    if args.run_dir:
        run = RunDir(Path(args.run_dir).resolve())
        try:
            run.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise TestbedError(f"cannot create run directory {run.path}: {e.strerror}") from None
        if run.file(PIDS_FILE).exists():
            if any(is_alive(e) for e in run.read_pids()):
                raise TestbedError(f"a testbed is already running in {run.path}")
            run.remove_state()
            run.path.mkdir(parents=True, exist_ok=True)
    else:
        base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
        if not os.access(base, os.W_OK):
            base = "/tmp"
        run = RunDir(Path(tempfile.mkdtemp(prefix="blefleet-testbed-", dir=base)))
        run.file(CREATED_MARK).touch()
    run.check_socket_paths()

    lease = None
    if args.real:
        if args.advertise_while_connected or args.stock_bluezoo:
            raise TestbedError("--advertise-while-connected and --stock-bluezoo are BlueZoo-lane options; "
                               "real controllers stop advertising on a connection")
        args.vm = args.vm or os.environ.get("BLEFLEET_TESTBED_VM")
        if args.vm:
            from .real import vm as vmmod
            args.vm = str(Path(args.vm).resolve())
            lease = vmmod.Lease.acquire(Path(args.vm), wait=VM_LEASE_WAIT, holder=str(run.path))
            lease.info = vmmod.reboot_if_oopsed(lease.info)
    elif args.vm:
        raise TestbedError("--vm goes with --real")

    argv = [sys.executable, "-m", "blefleet_testbed", "_controller", "--run-dir", str(run.path),
            "--boards", str(args.boards), "--latency-ms", str(args.latency_ms),
            "--jitter-ms", str(args.jitter_ms), "--temperature", args.temperature,
            "--centrals", str(args.centrals),
            "--notify-interval", str(args.notify_interval), "--owner-pid", str(args.owner_pid),
            "--temporary-timeout", str(args.temporary_timeout),
            "--connect-timeout", str(args.connect_timeout), "--scan-interval", str(args.scan_interval)]
    if args.advertise_while_connected:
        argv.append("--advertise-while-connected")
    if args.stock_bluezoo:
        argv.append("--stock-bluezoo")
    if args.humidity:
        argv.append("--humidity")
    if args.encrypted:
        argv.append("--encrypted")
    if args.real:
        argv.append("--real")
    if args.vm:
        argv += ["--vm", args.vm]
    read_end, write_end = os.pipe()
    argv[argv.index("--run-dir"):argv.index("--run-dir")] = ["--ready-fd", str(write_end)]
    keep = (write_end,) + ((lease.fd,) if lease else ())
    with open(run.file("controller.log"), "ab") as logfile:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logfile, stderr=logfile,
                                pass_fds=keep, start_new_session=True)
    os.close(write_end)
    if lease:
        os.close(lease.fd)  # the controller holds the VM now
    lane = "real BlueZ in a VM" if args.real else "BlueZoo"
    centrals = f" and {args.centrals} central adapters" if args.centrals > 1 else ""
    print(f"testbed: starting {args.boards} boards{centrals} on {lane} in {run.path}", file=sys.stderr)
    reply = _read_ready(read_end, proc, REAL_START_TIMEOUT if args.real else START_TIMEOUT)
    os.close(read_end)
    if reply is None or not reply.get("ok"):
        message = reply.get("error") if reply else "the testbed controller did not report ready"
        # A failure the controller explained is one sentence; an unexplained one comes
        # with the last lines of the logs.
        _kill_controller(run, proc, show_logs=reply is None)
        raise TestbedError(message)
    print(f"export DBUS_SYSTEM_BUS_ADDRESS={shlex.quote(run.bus_address)}")
    print(f"export BLEFLEET_TESTBED_RUN_DIR={shlex.quote(str(run.path))}")
    if args.real:
        # The VM kernel's Bluetooth management interface (BlueZoo has no kernel behind it).
        if run.file(MGMT_SOCKET).exists():
            print(f"export BLEFLEET_MGMT_SOCKET={shlex.quote(str(run.file(MGMT_SOCKET)))}")
        else:
            print(f"testbed: the VM in {args.vm or run.path} was booted without the management interface relay "
                  f"(an older testbed): BLEFLEET_MGMT_SOCKET is not set; boot it again to have it",
                  file=sys.stderr)
    sys.stdout.flush()
    return 0


def _read_ready(fd: int, proc: subprocess.Popen, timeout: float) -> dict | None:
    deadline = time.monotonic() + timeout
    data = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
            if data.endswith(b"\n"):
                break
    try:
        return json.loads(data) if data.strip() else None
    except ValueError:
        return None


def _kill_controller(run: RunDir, proc: subprocess.Popen, show_logs: bool) -> None:
    try:
        entries = run.read_pids()
    except TestbedError:
        entries = []
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    terminate_recorded(entries, grace=3.0)
    for role in ("controller", "bluezoo", "dbus-daemon", "bridge") if show_logs else ():
        try:
            lines = run.file(f"{role}.log").read_text(errors="replace").strip().splitlines()
        except FileNotFoundError:
            continue
        for line in lines[-15:]:
            print(f"testbed: {role}.log: {line}", file=sys.stderr)
    run.remove_state()


def stop(args) -> int:
    run = resolve_run_dir(args)
    entries = run.read_pids()
    controller = [e for e in entries if e["role"] == "controller"]
    # The controller stops its own children (a private VM too); anything still alive after
    # that is killed here.
    terminate_recorded(controller, grace=30.0)
    # The controller may have restarted BlueZoo meanwhile: read the record again.
    try:
        entries += run.read_pids()
    except TestbedError:
        pass
    terminate_recorded(entries, grace=3.0)
    left = wait_gone(entries, 1.0)
    run.remove_state()
    if left:
        raise TestbedError(f"processes {', '.join(str(e['pid']) for e in left)} did not stop")
    return 0


def vm_command(args) -> int:
    from .real import vm as vmmod
    if args.action == "start":
        if args.vm_dir:
            path = Path(args.vm_dir).resolve()
        else:
            path = Path(tempfile.mkdtemp(prefix="blefleet-vm-", dir="/tmp"))
        print(f"testbed: booting a VM with {args.centrals} central and {args.boards} board controllers "
              f"in {path} (about a minute)", file=sys.stderr)
        info = vmmod.start(path, centrals=args.centrals, boards=args.boards, owner_pid=args.owner_pid)
        print(f"export BLEFLEET_TESTBED_VM={shlex.quote(str(info.path))}")
        sys.stdout.flush()
        return 0
    path = args.vm_dir or os.environ.get("BLEFLEET_TESTBED_VM")
    if not path:
        raise TestbedError("no testbed VM: pass --vm-dir or set BLEFLEET_TESTBED_VM")
    if args.action == "crashes":
        from .lanes import crash_lines, crash_report, unasked
        lines = crash_lines(Path(path))[args.since:]
        chosen = unasked(lines) if args.unasked else lines
        for line in chosen:
            print(crash_report(Path(path), line))
        return 1 if args.fail_unasked and unasked(lines) else 0
    vmmod.stop(Path(path).resolve())
    return 0


# -- commands for a running testbed ------------------------------------------------------

def request(run: RunDir, message: dict):
    path = run.file(CONTROL_SOCKET)
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(COMMAND_TIMEOUT)
        try:
            s.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            raise TestbedError(f"no testbed is running in {run.path}") from None
        s.sendall(json.dumps(message).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    if not data:
        raise TestbedError(f"the testbed in {run.path} stopped while answering")
    reply = json.loads(data)
    if not reply["ok"]:
        raise TestbedError(reply["error"])
    return reply["result"]


def fault_request(args) -> dict:
    """The controller's request for `fault ...` (the options checked together)."""
    if args.action == "connect":
        if args.seed is not None and args.rate is None:
            raise TestbedError("--seed goes with --rate")
        count = args.count if args.count is not None else (0 if args.rate is not None else 1)
        return {"op": "fault", "kind": "connect", "board": args.name, "status": args.status,
                "count": count, "rate": args.rate or 0.0, "seed": args.seed or 0}
    if args.action == "drop":
        if args.seed is not None and args.every is None:
            raise TestbedError("--seed goes with --every")
        return {"op": "fault", "kind": "drop", "board": args.name, "every": args.every, "seed": args.seed or 0}
    if args.action == "slow":
        return {"op": "fault", "kind": "slow", "board": args.name, "delay": args.delay}
    if args.action == "hang":
        return {"op": "fault", "kind": "hang", "adapter": args.adapter, "seconds": args.seconds,
                "linksLive": args.links_live}
    return {"op": "fault", "kind": "clear"}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "_controller":
            from . import controller
            return controller.main(args)
        if args.command == "_vm_keeper":
            from .real import vm as vmmod
            return vmmod.keeper_main(args)
        if args.command == "_bridge":
            from .real import bridge
            return bridge.main(args)
        if args.command == "vm":
            return vm_command(args)
        if args.command == "start":
            return start(args)
        if args.command == "stop":
            return stop(args)
        run = resolve_run_dir(args)
        if args.command == "state":
            print(json.dumps(request(run, {"op": "state"})))
        elif args.command == "watch-links":
            from . import referee
            return referee.run(run.bus_address)
        elif args.command == "board":
            if args.action == "temp":
                request(run, {"op": "temp", "board": args.name, "celsius": args.celsius})
            elif args.action == "signal":
                request(run, {"op": "signal", "board": args.name, "rssi": args.rssi, "adapter": args.adapter})
            else:
                request(run, {"op": args.action, "board": args.name})
        elif args.command == "fault":
            request(run, fault_request(args))
        elif args.command == "bluez":
            if args.action == "wait":
                request(run, {"op": "bluez-wait"})
            elif args.action == "segfault":
                request(run, {"op": "bluez-segfault", "unasked": args.unasked})
            else:
                request(run, {"op": "bluez-restart", "crash": args.crash})
        elif args.command == "adapter":
            if args.action == "plug":
                print(request(run, {"op": "plug"}))
            elif args.action == "unplug":
                request(run, {"op": "unplug"})
            else:
                request(run, {"op": "adapter", "powered": args.action == "on", "adapter": args.name})
        return 0
    except TestbedError as e:
        print(f"testbed: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
