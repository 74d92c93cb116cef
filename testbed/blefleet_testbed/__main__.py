import signal
import sys

# A parent may hand us a blocked signal mask (threads of some runtimes block every signal,
# and children inherit the mask). The testbed's processes are stopped with SIGTERM, so
# start from a clean mask; every process it spawns inherits this one.
signal.pthread_sigmask(signal.SIG_SETMASK, [])

from .cli import main

sys.exit(main())
