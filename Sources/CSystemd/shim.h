#ifndef BLEFLEET_CSYSTEMD_SHIM_H
#define BLEFLEET_CSYSTEMD_SHIM_H
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

/* SD_LISTEN_FDS_START is a macro Swift does not import. */
static const int CSYSTEMD_LISTEN_FDS_START = SD_LISTEN_FDS_START;

#endif
