#!/bin/sh
# The testbed VM's control agent. `guest_agent.sh serve VMDIR` reads one command line from
# the host (socat hands it the connection) and answers "ok ..." or "error <sentence>".
# Commands:
#   ping                  -> ok pong
#   bluez-stop            bluetoothd stops (SIGTERM, then waits for it to exit)
#   bluez-crash           bluetoothd dies at once (SIGKILL, as when it segfaults): no
#                         cleanup, its controllers stay powered and the kernel keeps the links
#   bluez-start           bluetoothd starts again with $VMDIR/main.conf, under a supervisor
#                         that restarts it a second after it dies unasked (as the package's
#                         drop-in for bluetooth.service has systemd do):
#                         each such crash is one line "TIME REASON" in $VMDIR/bluetoothd.crashes
#   bluez-status          "ok running", or why not
#   bluez-segfault [unasked]
#                         bluetoothd gets SIGSEGV (as 5.66 segfaults by itself under faults): its
#                         supervisor writes the crash down, marked "(asked for: bluez segfault)",
#                         and restarts it; with `unasked` the mark is left off, as if bluetoothd
#                         died by itself (to prove that the harness fails on such a crash)
#   bluez-reset           bluetoothd stops, every controller powers off, the stored
#                         device cache is wiped, bluetoothd starts: a fresh testbed
#                         (btvirt starts again first if a controller is unusable)
#   btvirt-start N BTVIRT the patched btvirt starts with N controllers; answers once
#                         every one is through its setup (listed by the kernel's mgmt)
#   power-cut N           controller hciN goes silent at once: an HCI_Reset sent straight
#                         to it (the patched btvirt ends its links at the remote with a
#                         supervision timeout), before its host can say anything
#   rssi S A DBM          controller hciS hears hciA's advertising with DBM from its next
#                         advertising report on (the patched btvirt reads /run/btvirt-rssi)
#   hotplug on|off        the patched btvirt opens one more controller ("ok N": it is hciN)
#                         or closes it again, as a USB dongle plugged in or pulled out
#   fault VERB ID ...     a fault in the patched btvirt (knob 10 of its patch: connect ID
#                         STATUS COUNT RATE SEED | drop ID | drop-every ID MS SEED | slow ID
#                         MS | hang ID MS | stall ID MS | clear): appended to /run/btvirt-faults, btvirt
#                         gets SIGUSR1; answers once btvirt has applied it
#   trace on|off          btmon records every controller's HCI traffic to $VMDIR/btmon.log
#   dmesg [hciN ...]      the kernel's last lines (or its last lines naming hciN ...)
#   dmesg-save            the kernel's whole log to $VMDIR/dmesg-now.log (a segfault of
#                         bluetoothd or an oops with its call trace, to read on the host)
#   tainted               "ok N": the kernel's taint flags (128: it oopsed since boot)
#   taint-as-oopsed       marks the kernel as if it had oopsed (taint flag 128, which only
#                         a reboot clears), to test that a testbed reboots such a VM
VMDIR=${VMDIR:-$(cat /run/blefleet-vmdir 2>/dev/null)}
BLUETOOTHD=/usr/libexec/bluetooth/bluetoothd

# Every program started here costs a few tenths of a second (the VM runs under software
# emulation): the loops that poll use the shell's builtins (read, kill), not cat or sed.
first_line() { _line=; [ -r "$1" ] && read -r _line <"$1"; echo "$_line"; }
bluez_pid() { first_line /run/bluetoothd.pid; }
supervisor_pid() { first_line /run/bluetoothd.supervisor; }

# bluetoothd runs under this loop, as on a gateway with the package's drop-in for
# bluetooth.service (Restart=on-failure, RestartSec=1s): an exit nobody asked for (bluetoothd 5.66 segfaults now and then under faults) is
# one line in $VMDIR/bluetoothd.crashes (the time, how it ended, the kernel's line about it)
# and bluetoothd starts again. A death by a signal leaves its core in $VMDIR/cores/core.PID
# (named in the line; the host, which shares this root file system, reads its backtrace:
# `scripts/testbed vm crashes`). bluez-stop and bluez-crash first say that the exit is wanted
# (/run/bluetoothd.stopping): the loop ends then. Five exits in a row within a second of
# their start end it too (systemd's start limit): a bluetoothd that cannot start is not
# restarted for ever.
bluez_supervise() {
  quick=0
  mkdir -p "$VMDIR/cores"
  echo "$VMDIR/cores/core.%p" >/proc/sys/kernel/core_pattern
  ulimit -c unlimited
  while [ ! -e /run/bluetoothd.stopping ]; do
    echo "--- bluetoothd starts $(date +%T.%N)" >>"$VMDIR/bluetoothd.log"
    started=$(cut -d. -f1 /proc/uptime)
    # $VMDIR/bluetoothd.debug, when there, names the source files whose debug lines
    # bluetoothd logs (its --debug, e.g. "src/device.c:src/shared/gatt-client.c"): a
    # diagnosis switch for a person, read at each start.
    debug=""
    [ -s "$VMDIR/bluetoothd.debug" ] && debug="--debug=$(head -n 1 "$VMDIR/bluetoothd.debug")"
    "$BLUETOOTHD" -n --experimental $debug -f "$VMDIR/main.conf" >>"$VMDIR/bluetoothd.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >/run/bluetoothd.pid
    wait "$pid"
    rc=$?
    [ -e /run/bluetoothd.stopping ] && break
    if [ "$rc" -gt 128 ]; then reason="killed by SIG$(kill -l $((rc - 128)))"
    else reason="exited with status $rc"; fi
    kernel=$(dmesg | grep -F "bluetoothd[$pid]" | tail -n 1 | sed 's/^\[[ 0-9.]*\] //')
    core=""
    [ -e "$VMDIR/cores/core.$pid" ] && core="; core: cores/core.$pid"
    asked=""
    if [ -e /run/bluetoothd.segfault-asked ]; then asked=" (asked for: bluez segfault)"; rm -f /run/bluetoothd.segfault-asked; fi
    echo "$(date +%T) bluetoothd (pid $pid) $reason${kernel:+; kernel: $kernel}$core$asked" >>"$VMDIR/bluetoothd.crashes"
    echo "--- bluetoothd (pid $pid) $reason $(date +%T.%N), unasked: restarting it" >>"$VMDIR/bluetoothd.log"
    if [ $(( $(cut -d. -f1 /proc/uptime) - started )) -le 1 ]; then quick=$((quick + 1)); else quick=0; fi
    if [ "$quick" -ge 5 ]; then
      echo "--- bluetoothd exited 5 times in a row at start: not restarted again" >>"$VMDIR/bluetoothd.log"
      break
    fi
    sleep 1
  done
  rm -f /run/bluetoothd.pid
}

# Ends the supervised bluetoothd with signal $1 (TERM: a stop; KILL: a crash), the
# supervisor told first; waits until both are gone (10 s, SIGKILL after 5 s).
bluez_end() {
  touch /run/bluetoothd.stopping
  sup=$(supervisor_pid)
  signalled=""
  i=0
  while { [ -n "$sup" ] && running "$sup"; } || { pid=; [ -r /run/bluetoothd.pid ] && read -r pid </run/bluetoothd.pid; [ -n "$pid" ] && running "$pid"; }; do
    pid=; [ -r /run/bluetoothd.pid ] && read -r pid </run/bluetoothd.pid
    if [ -n "$pid" ] && [ "$pid" != "$signalled" ]; then kill "-$1" "$pid" 2>/dev/null; signalled=$pid; fi
    i=$((i + 1))
    if [ $i -eq 100 ] && [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; fi
    if [ $i -gt 200 ]; then echo "error bluetoothd (pid $pid) did not exit"; return 1; fi
    sleep 0.05
  done
  rm -f /run/bluetoothd.pid /run/bluetoothd.supervisor
}

bluez_stop() {
  [ -n "$(bluez_pid)$(supervisor_pid)" ] || return 0
  bluez_end TERM
}

bluez_crash() {
  [ -n "$(bluez_pid)" ] || return 0
  bluez_end KILL || return 1
  echo "--- bluetoothd killed $(date +%T.%N)" >>"$VMDIR/bluetoothd.log"
}

# SIGSEGV to bluetoothd, as when it segfaults; answers once its supervisor has written the
# crash down. Marked as asked for, unless $1 is `unasked`.
bluez_segfault() {
  pid=$(bluez_pid)
  [ -n "$pid" ] && running "$pid" || { echo "error bluetoothd is not running"; return; }
  before=$(cat "$VMDIR/bluetoothd.crashes" 2>/dev/null | wc -l)
  [ "$1" = unasked ] || touch /run/bluetoothd.segfault-asked
  kill -SEGV "$pid"
  i=0
  until [ "$(cat "$VMDIR/bluetoothd.crashes" 2>/dev/null | wc -l)" -gt "$before" ]; do
    i=$((i + 1))
    [ $i -gt 200 ] && { echo "error bluetoothd's supervisor wrote no crash within 10 s"; return; }
    sleep 0.05
  done
  echo "ok"
}

bluez_start() {
  sup=$(supervisor_pid)
  if [ -z "$sup" ] || ! running "$sup"; then
    rm -f /run/bluetoothd.stopping /run/bluetoothd.pid
    # exec: the caller's stdout (a pipe or the host's connection) must not stay open in the
    # supervisor (a plain redirection of a function keeps a saved copy of it).
    (exec </dev/null >/dev/null 2>&1; bluez_supervise) &
    sup=$!
    echo "$sup" >/run/bluetoothd.supervisor
  fi
  # Owned on the bus = ready for clients.
  i=0
  until dbus-send --system --print-reply --dest=org.freedesktop.DBus / \
        org.freedesktop.DBus.GetNameOwner string:org.bluez >/dev/null 2>&1; do
    running "$sup" || { echo "error bluetoothd exited at start: $(grep -v '^---' "$VMDIR/bluetoothd.log" | tail -n 2 | tr '\n' ' ')"; return 1; }
    i=$((i + 1))
    [ $i -gt 600 ] && { echo "error bluetoothd did not own org.bluez within 30 s"; return 1; }
    sleep 0.05
  done
}

controllers() { ls /sys/class/bluetooth 2>/dev/null | grep '^hci[0-9]*$' | sed 's/^hci//' | sort -n; }

# Controllers through their setup: the ones the kernel's management interface lists,
# the ones bluetoothd can use. A controller whose setup failed (its HCI_Reset timed out)
# stays registered in /sys but is never listed.
# btmgmt is bounded: an answer that never comes must not hold the boot forever.
mgmt_info() { timeout 10 btmgmt info 2>/dev/null; }
# $1: what mgmt_info printed a moment ago (asked afresh when empty).
usable_count() {
  if [ -n "$1" ]; then printf '%s\n' "$1"; else mgmt_info; fi | sed -n 's/^Index list with \([0-9]*\) item.*/\1/p' | head -n 1
}

# Seconds since the guest booted (whole seconds), for deadlines and the logs.
uptime_s() { cut -d. -f1 /proc/uptime; }

# The kernel's lines about controllers that were not set up, or its last lines.
kernel_lines() {
  if [ $# -gt 0 ]; then
    pattern=$(echo "$*" | sed 's/ /:|/g'):
    dmesg | grep -E "$pattern" | tail -n 5 | tr '\n' '|'
  else
    dmesg | tail -n 20 | tr '\n' '|'
  fi
}

unusable_controllers() {
  listed=$(mgmt_info | sed -n 's/^\(hci[0-9]*\):.*/\1/p')
  for n in $(controllers); do
    echo "$listed" | grep -qx "hci$n" || printf 'hci%s ' "$n"
  done
}

btvirt_launch() {
  echo "--- btvirt starts with $1 controllers $(date +%T.%N)" >>"$VMDIR/btvirt.log"
  rm -f /run/btvirt-faults /run/btvirt-faults.applied   # a new btvirt has no fault
  "$2" -L -l"$1" >>"$VMDIR/btvirt.log" 2>&1 </dev/null &
  echo $! >/run/btvirt.pid
}

# Whether process $1 runs: not gone, and not a zombie (btvirt is this shell's child, and
# one that exited stays a zombie, which kill -0 takes for alive, until the shell reaps it).
running() {
  kill -0 "$1" 2>/dev/null || return 1
  stat=
  read -r stat <"/proc/$1/stat" 2>/dev/null || return 1
  state=${stat##*) }
  state=${state%% *}
  [ -n "$state" ] && [ "$state" != Z ]
}

# Waits until all $1 controllers are usable: 60 s at most by the guest's clock (its
# progress goes to btvirt.log, read by the host when the boot takes too long).
btvirt_wait() {
  end=$(( $(uptime_s) + 60 ))
  seen=-1
  while :; do
    n=$(usable_count)
    n=${n:-0}
    if [ "$n" != "$seen" ]; then
      echo "--- $n of $1 controllers set up (guest uptime $(uptime_s) s)" >>"$VMDIR/btvirt.log"
      seen=$n
    fi
    [ "$n" -ge "$1" ] && return 0
    running "$(cat /run/btvirt.pid)" \
      || { echo "error btvirt exited: $(tail -n 3 "$VMDIR/btvirt.log" | tr '\n' ' ')"; return 1; }
    if [ "$(uptime_s)" -gt "$end" ]; then
      bad=$(unusable_controllers)
      echo "error only $n of $1 virtual controllers were set up within 60 s (not set up: ${bad:-none}; kernel: $(kernel_lines $bad))"
      return 1
    fi
    sleep 0.2
  done
}

# btvirt with $1 controllers ($2: its path); a second start if the first leaves one unusable.
btvirt_start() {
  echo "$1" >/run/btvirt-count
  echo "$2" >/run/btvirt-path
  btvirt_launch "$1" "$2"
  out=$(btvirt_wait "$1") && return 0
  echo "--- btvirt restarts: ${out#error }" >>"$VMDIR/btvirt.log"
  btvirt_stop || return 1
  btvirt_launch "$1" "$2"
  btvirt_wait "$1"
}

btvirt_stop() {
  pid=$(cat /run/btvirt.pid 2>/dev/null)
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  rm -f /run/btvirt.pid /run/btvirt-hotplug
  i=0
  while [ -n "$(controllers)" ]; do
    i=$((i + 1))
    [ $i -gt 200 ] && { echo "error the controllers did not go away when btvirt stopped"; return 1; }
    sleep 0.05
  done
}

# A controller that is registered but unusable does not recover on its own: btvirt starts
# again, with the same controllers (same indexes, same addresses).
btvirt_heal() {
  count=$(first_line /run/btvirt-count)
  [ -n "$count" ] || return 0
  n=$(usable_count "$1")
  [ "${n:-0}" -ge "$count" ] && return 0
  echo "--- btvirt restarts: ${n:-0} of $count controllers usable (not set up: $(unusable_controllers))" >>"$VMDIR/btvirt.log"
  btvirt_stop || return 1
  btvirt_start "$count" "$(cat /run/btvirt-path)"
}

# Waits until hciN is (present = 1) or is not (0) registered with the kernel.
wait_controller() {
  i=0
  while :; do
    if [ -e "/sys/class/bluetooth/hci$1" ]; then [ "$2" = 1 ] && return 0
    else [ "$2" = 0 ] && return 0; fi
    i=$((i + 1))
    [ $i -gt 200 ] && return 1
    sleep 0.05
  done
}

hotplug() {
  current=$(cat /run/btvirt-hotplug 2>/dev/null)
  case "$1" in
    on)
      if [ -n "$current" ]; then echo "ok $current"; return; fi
      # The kernel gives the new controller the lowest free index.
      next=0
      for n in $(controllers); do [ "$n" = "$next" ] && next=$((next + 1)); done
      kill -USR2 "$(cat /run/btvirt.pid)" || { echo "error btvirt is not running"; return; }
      wait_controller "$next" 1 || { echo "error no controller hci$next appeared"; return; }
      echo "$next" >/run/btvirt-hotplug
      echo "ok $next" ;;
    off)
      if [ -z "$current" ]; then echo "ok"; return; fi
      kill -USR2 "$(cat /run/btvirt.pid)" || { echo "error btvirt is not running"; return; }
      wait_controller "$current" 0 || { echo "error hci$current did not go away"; return; }
      rm -f /run/btvirt-hotplug
      echo "ok" ;;
    *) echo "error hotplug needs on or off" ;;
  esac
}

# A fault for btvirt (its patch's knob 10): one line "SEQ VERB ARGS" appended to
# /run/btvirt-faults, SIGUSR1, and the wait until btvirt names SEQ as applied.
fault() {
  pid=$(cat /run/btvirt.pid 2>/dev/null)
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then echo "error btvirt is not running"; return; fi
  case "$*" in
    ''|*[!a-z0-9\ -]*) echo "error fault needs a verb and numbers"; return ;;
  esac
  seq=1
  [ -f /run/btvirt-faults ] && seq=$(( $(wc -l </run/btvirt-faults) + 1 ))
  echo "$seq $*" >>/run/btvirt-faults
  kill -USR1 "$pid"
  i=0
  until [ "$(first_line /run/btvirt-faults.applied)" = "$seq" ]; do
    i=$((i + 1))
    [ $i -gt 200 ] && { echo "error btvirt did not take the fault within 10 s"; return; }
    sleep 0.05
  done
  echo "ok"
}

bluez_reset() {
  bluez_stop || return 1
  rm -f /run/btvirt-rssi
  # No fault of an earlier testbed survives (a hung controller answers again).
  if [ -f /run/btvirt-faults ]; then
    out=$(fault clear)
    case "$out" in ok*) ;; *) echo "$out"; return 1 ;; esac
  fi
  if [ -n "$(first_line /run/btvirt-hotplug)" ]; then
    out=$(hotplug off)
    case "$out" in ok*) ;; *) echo "$out"; return 1 ;; esac
  fi
  # Every controller still powered goes off, all at once (a bluetoothd that stops powers
  # them off itself; one that died did not, and its links would survive).
  # One question to the kernel serves this and btvirt_heal's count.
  if info=$(mgmt_info) && [ -n "$info" ]; then
    powered=$(printf '%s\n' "$info" | awk '/^hci[0-9]+:/ { idx = substr($1, 4); sub(/:$/, "", idx) }
                                            /current settings:/ && / powered/ { print idx }')
  else
    info=
    powered=$(controllers)
  fi
  pids=""
  for idx in $powered; do
    btmgmt --index "$idx" power off >/dev/null 2>&1 &
    pids="$pids $!"
  done
  [ -z "$pids" ] || wait $pids
  out=$(btvirt_heal "$info") || { echo "$out"; return 1; }
  rm -rf /var/lib/bluetooth/*
  bluez_start
}

run() {
  case "$1" in
    ping) echo "ok pong" ;;
    bluez-stop) bluez_stop && echo "ok" ;;
    bluez-crash) bluez_crash && echo "ok" ;;
    bluez-segfault) bluez_segfault "$2" ;;
    bluez-start) bluez_start && echo "ok" ;;
    bluez-reset) bluez_reset && echo "ok" ;;
    bluez-status)
      if kill -0 "$(bluez_pid)" 2>/dev/null; then echo "ok running"
      else echo "error bluetoothd is not running in the VM (its log ends: $(grep -v '^---' "$VMDIR/bluetoothd.log" | tail -n 2 | tr '\n' ' '))"; fi ;;
    power-cut)
      case "$2" in ''|*[!0-9]*) echo "error power-cut needs a controller index"; return ;; esac
      if out=$(hcitool -i "hci$2" cmd 0x03 0x0003 2>&1); then echo "ok"; else echo "error hcitool: $out" | tr '\n' ' '; echo; fi ;;
    rssi)
      case "$2:$3:$4" in *::*|:*|*:|*[!0-9:-]*) echo "error rssi needs SCANNER ADVERTISER DBM"; return ;; esac
      echo "$2 $3 $4" >>/run/btvirt-rssi
      echo "ok" ;;
    hotplug) hotplug "$2" ;;
    fault) shift; fault "$@" ;;
    trace)
      if [ "$2" = on ]; then
        btmon -T >"$VMDIR/btmon.log" 2>&1 </dev/null &
        echo $! >/run/btmon.pid
        echo "ok"
      else
        kill "$(cat /run/btmon.pid 2>/dev/null)" 2>/dev/null
        rm -f /run/btmon.pid
        echo "ok"
      fi ;;
    dmesg) shift; echo "ok $(kernel_lines "$@")" ;;
    dmesg-save) dmesg >"$VMDIR/dmesg-now.log" && echo "ok" ;;
    tainted) echo "ok $(cat /proc/sys/kernel/tainted)" ;;
    taint-as-oopsed) echo 128 >/proc/sys/kernel/tainted && echo "ok" ;;
    btvirt-start)
      case "$2" in ''|*[!0-9]*) echo "error btvirt-start needs a controller count"; return ;; esac
      btvirt_start "$2" "$3" && echo "ok" ;;
    *) echo "error unknown agent command '$1'" ;;
  esac
}

if [ "$1" = serve ]; then
  VMDIR=$2
  read -r line
  # shellcheck disable=SC2086
  run $line
else
  [ -n "$VMDIR" ] || VMDIR=$(dirname "$0")
  run "$@"
fi
