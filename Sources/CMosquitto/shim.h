#ifndef BLEFLEET_CMOSQUITTO_SHIM_H
#define BLEFLEET_CMOSQUITTO_SHIM_H
/* libmosquitto (Debian libmosquitto-dev for the header, libmosquitto1 at run time): the
   MQTT client library. Only the MQTT module imports this. Nothing variadic is used.

   The library is not linked: blectl carries the MQTT module for --broker alone, and a
   linked libmosquitto would load it, libssl and libcrypto into every blectl run. The MQTT
   module opens it with dlopen at first use (Libmosquitto.swift) and takes each function
   below from it with dlsym, typed by mosquitto.h's own declaration. */
#include <dlfcn.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <mosquitto.h>

/* The soname of the ABI this header describes. */
#define CMOSQUITTO_SONAME "libmosquitto.so.1"

/* Every libmosquitto function the MQTT module calls: X(field, function). */
#define CMOSQUITTO_FUNCTIONS(X) \
    X(lib_init, mosquitto_lib_init) \
    X(strerror, mosquitto_strerror) \
    X(connack_string, mosquitto_connack_string) \
    X(new_client, mosquitto_new) \
    X(destroy, mosquitto_destroy) \
    X(threaded_set, mosquitto_threaded_set) \
    X(int_option, mosquitto_int_option) \
    X(user_data_set, mosquitto_user_data_set) \
    X(connect_callback_set, mosquitto_connect_callback_set) \
    X(disconnect_callback_set, mosquitto_disconnect_callback_set) \
    X(publish_callback_set, mosquitto_publish_callback_set) \
    X(message_callback_set, mosquitto_message_callback_set) \
    X(subscribe_callback_set, mosquitto_subscribe_callback_set) \
    X(unsubscribe_callback_set, mosquitto_unsubscribe_callback_set) \
    X(username_pw_set, mosquitto_username_pw_set) \
    X(will_set, mosquitto_will_set) \
    X(tls_set, mosquitto_tls_set) \
    X(connect_async, mosquitto_connect_async) \
    X(reconnect_async, mosquitto_reconnect_async) \
    X(loop, mosquitto_loop) \
    X(disconnect, mosquitto_disconnect) \
    X(socket, mosquitto_socket) \
    X(publish, mosquitto_publish) \
    X(subscribe, mosquitto_subscribe) \
    X(unsubscribe, mosquitto_unsubscribe) \
    X(pub_topic_check, mosquitto_pub_topic_check) \
    X(sub_topic_check, mosquitto_sub_topic_check) \
    X(validate_utf8, mosquitto_validate_utf8)

/* The functions, each a pointer of the type mosquitto.h declares. */
typedef struct cmosquitto_functions {
#define CMOSQUITTO_FIELD(field, function) __typeof__(function) *_Nonnull field;
    CMOSQUITTO_FUNCTIONS(CMOSQUITTO_FIELD)
#undef CMOSQUITTO_FIELD
} cmosquitto_functions;

/* Fills `functions` from an open `library`; returns NULL, or the name of the first
   function the library lacks (then `functions` is incomplete and must not be used). */
static inline const char *_Nullable cmosquitto_resolve(void *_Nonnull library, cmosquitto_functions *_Nonnull functions) {
#define CMOSQUITTO_RESOLVE(field, function) \
    if ((functions->field = (__typeof__(function) *)dlsym(library, #function)) == NULL) return #function;
    CMOSQUITTO_FUNCTIONS(CMOSQUITTO_RESOLVE)
#undef CMOSQUITTO_RESOLVE
    return NULL;
}

/* Names the calling thread (shown by top -H, gdb); prctl is variadic. */
static inline void cmosquitto_set_thread_name(const char *_Nonnull name) {
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
}

#endif
