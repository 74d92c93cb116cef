#!/bin/sh
# The testbed VM's one job, run by virtme-ng's init as the guest's script (vng --exec).
# Brings up the kernel's Bluetooth stack with CONTROLLERS virtual LE controllers (the
# project's patched btvirt), a system bus, bluetoothd, and three forwarded TCP ports:
#   7001 -> the system bus (the host bridges a Unix socket to it)
#   7002 -> guest_agent.sh (one command per connection: restart bluetoothd, ...)
#   7003 -> the kernel's Bluetooth management interface (mgmt_relay.py: a control-channel
#           socket per connection, as btmgmt uses; the host bridges a Unix socket to it)
# Everything it writes goes to the VM directory, shared read-write with the host.
# A failure is one line "failed: ..." in $VMDIR/guest.status; "ready" means serving.
VMDIR=$1
CONTROLLERS=$2
BTVIRT=$3
HERE=$(dirname "$0")
export VMDIR

exec >"$VMDIR/guest.log" 2>&1
status() { echo "$*" >>"$VMDIR/guest.status"; }
# Each step with the guest's uptime: a slow boot says where its time went.
step() { echo "== $(cut -d' ' -f1 /proc/uptime) s: $*"; }
fail() { status "failed: $*"; echo "failed: $*"; exit 1; }
set -x
# The kernel's log, kept where the host can read it even after the VM is gone.
dmesg -w >"$VMDIR/dmesg.log" 2>&1 </dev/null &

step "loading the kernel modules"
# The crypto modules first: bluetooth's SMP needs them, and btvirt stalls while the
# kernel loads them on demand, so the first controller's HCI_Reset would time out.
modprobe -a af_alg algif_hash algif_skcipher cmac ecdh_generic virtio_net \
  || fail "the guest kernel could not load its crypto or network modules"
modprobe -a bluetooth hci_vhci || fail "the guest kernel has no Bluetooth modules (bluetooth, hci_vhci)"

step "network and system bus"
ip link set lo up
IFACE=$(ls /sys/class/net | grep -v '^lo$' | head -n 1)
[ -n "$IFACE" ] || fail "the guest has no network interface for the bus forward"
ip addr add 10.0.2.15/24 dev "$IFACE" && ip link set "$IFACE" up \
  || fail "could not configure the guest's network interface $IFACE"

mkdir -p /run/dbus /var/lib/bluetooth
dbus-daemon --config-file="$VMDIR/guest-bus.conf" --fork --nopidfile \
  || fail "the guest's dbus-daemon did not start"

# The kernel's management interface for the host (mgmt_relay.py), independent of
# bluetoothd: a bluetoothd restart leaves it be. Python starts slowly here (TCG, 9p root),
# so it starts now, niced below btvirt's and bluetoothd's setup, and is waited for last.
step "the management relay on port 7003 starts"
rm -f /run/blefleet-mgmt-relay.ready
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3
nice -n 10 "$PYTHON" -I -S "$HERE/mgmt_relay.py" 10.0.2.15 7003 /run/blefleet-mgmt-relay.ready </dev/null &
relay=$!

step "btvirt with $CONTROLLERS controllers"
# Every controller registered and through its setup (HCI_Reset ...) before bluetoothd.
out=$("$HERE/guest_agent.sh" btvirt-start "$CONTROLLERS" "$BTVIRT")
case "$out" in ok*) ;; *) fail "${out#error }" ;; esac
step "bluetoothd"
out=$("$HERE/guest_agent.sh" bluez-start)
case "$out" in ok*) ;; *) fail "bluetoothd did not start: ${out#error }" ;; esac

# Listening before "ready": the host may use it as soon as the VM is up. 60 s by the
# guest's clock; the wait is not traced line by line.
step "the management relay"
{ set +x; } 2>/dev/null
end=$(( $(cut -d. -f1 /proc/uptime) + 60 ))
until [ -e /run/blefleet-mgmt-relay.ready ]; do
  kill -0 "$relay" 2>/dev/null || fail "the management relay exited at start (see guest.log)"
  [ "$(cut -d. -f1 /proc/uptime)" -gt "$end" ] && fail "the management relay did not listen within 60 s"
  sleep 0.1
done
set -x
renice -n 0 -p "$relay" >/dev/null

socat TCP-LISTEN:7001,fork,reuseaddr UNIX-CONNECT:/run/dbus/system_bus_socket &
socat TCP-LISTEN:7002,fork,reuseaddr EXEC:"$HERE/guest_agent.sh serve $VMDIR" &
step "ready"
status ready
wait
