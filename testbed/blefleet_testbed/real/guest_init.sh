#!/bin/sh
# The testbed VM's one job, run by virtme-ng's init as the guest's script (vng --exec).
# Brings up the kernel's Bluetooth stack with CONTROLLERS virtual LE controllers (the
# project's patched btvirt), a system bus, bluetoothd, and two forwarded TCP ports:
#   7001 -> the system bus (the host bridges a Unix socket to it)
#   7002 -> guest_agent.sh (one command per connection: restart bluetoothd, ...)
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

step "btvirt with $CONTROLLERS controllers"
# Every controller registered and through its setup (HCI_Reset ...) before bluetoothd.
out=$("$HERE/guest_agent.sh" btvirt-start "$CONTROLLERS" "$BTVIRT")
case "$out" in ok*) ;; *) fail "${out#error }" ;; esac
step "bluetoothd"
out=$("$HERE/guest_agent.sh" bluez-start)
case "$out" in ok*) ;; *) fail "bluetoothd did not start: ${out#error }" ;; esac

socat TCP-LISTEN:7001,fork,reuseaddr UNIX-CONNECT:/run/dbus/system_bus_socket &
socat TCP-LISTEN:7002,fork,reuseaddr EXEC:"$HERE/guest_agent.sh serve $VMDIR" &
step "ready"
status ready
wait
