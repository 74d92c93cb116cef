// crypt(3) and crypt_checksalt(3) from libxcrypt (Debian: libcrypt-dev).
#include <crypt.h>
