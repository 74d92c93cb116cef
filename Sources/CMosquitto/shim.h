#ifndef BLEFLEET_CMOSQUITTO_SHIM_H
#define BLEFLEET_CMOSQUITTO_SHIM_H
/* libmosquitto (Debian libmosquitto-dev): the MQTT client library. Only the MQTT
   module imports this. Nothing variadic is used. */
#include <mosquitto.h>
#endif
