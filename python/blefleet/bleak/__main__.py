"""python3 -m blefleet.bleak [--socket PATH] SCRIPT.py [ARGS...] | -m MODULE [ARGS...]

Runs an unchanged bleak script with its plain ``BleakClient``/``BleakScanner`` going through
blefleetd (``blefleet.bleak.install()``), as ``__main__`` with ``sys.argv = [SCRIPT, ARGS...]``."""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys

from . import MISSING_BLEAK

USAGE = "usage: python3 -m blefleet.bleak [--socket PATH] SCRIPT.py [ARGS...] | -m MODULE [ARGS...]"
HELP = f"""{USAGE}

Runs a bleak script unchanged, its BleakClient and BleakScanner going through blefleetd's socket
(the daemon's adapters and leases) instead of BlueZ's D-Bus.

  --socket PATH  blefleetd's socket (else $BLEFLEET_SOCKET, else /run/blefleet/blefleetd.sock)
  -m MODULE      run a module as python3 -m does
  -h, --help     this text"""


def _usage(problem: str) -> int:
    print(f"blefleet.bleak: {problem}\n{USAGE}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    socket: str | None = None
    script: str | None = None
    module: str | None = None
    rest: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg in ("-h", "--help"):
            print(HELP)
            return 0
        if arg == "--socket" or arg.startswith("--socket="):
            if "=" in arg:
                socket = arg.split("=", 1)[1]
            elif index + 1 < len(argv):
                index += 1
                socket = argv[index]
            else:
                return _usage("--socket needs a path")
            if not socket:
                return _usage("--socket needs a path")
        elif arg == "-m" or (arg.startswith("-m") and not arg.startswith("--")):
            module = arg[2:] or (argv[index + 1] if index + 1 < len(argv) else None)
            if not module:
                return _usage("-m needs a module name")
            rest = argv[index + (1 if arg[2:] else 2):]
            break
        elif arg == "--":
            if index + 1 < len(argv):
                script, rest = argv[index + 1], argv[index + 2:]
            break
        elif arg.startswith("-") and arg != "-":
            return _usage(f"unknown option {arg}")
        else:
            script, rest = arg, argv[index + 1:]
            break
        index += 1
    if script is None and module is None:
        return _usage("no script to run")

    try:
        from ._install import install
    except ImportError as error:
        if (error.name or "").split(".")[0] != "bleak":
            raise
        print(MISSING_BLEAK, file=sys.stderr)
        return 1
    install(socket)
    if module is not None:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return _usage(f"no module named {module}")
        sys.argv = [module, *rest]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    assert script is not None
    if script == "-" or not os.path.isfile(script):
        return _usage(f"cannot open the script {script!r}: no such file")
    sys.argv = [script, *rest]
    # As python3 SCRIPT does: the script's directory first on the import path.
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
