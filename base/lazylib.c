/*
 * base/lazylib.c — a library opened on first use (see lazylib.h).
 */
#include "base/lazylib.h"

#include "base/error.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

_Static_assert(sizeof(void (*)(void)) == sizeof(void *), "a dlsym answer must fit a function pointer");

/* One lock for every library: taken only by first calls, which are rare. */
static pthread_mutex_t opening = PTHREAD_MUTEX_INITIALIZER;

static bool bind_all(BaseLazyLib *lib)
{
    void *handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (!handle)
        return base_error(lib->failure, sizeof lib->failure, "cannot load %s (apt-get install %s): %s", lib->soname,
                          lib->package, dlerror());
    for (size_t i = 0; i < lib->nsymbols; i++) {
        void *fn = dlsym(handle, lib->symbols[i].name);
        if (!fn) {
            base_error(lib->failure, sizeof lib->failure, "%s has no %s (apt-get install %s): %s", lib->soname,
                       lib->symbols[i].name, lib->package, dlerror());
            for (size_t j = 0; j < i; j++) memset(lib->symbols[j].slot, 0, sizeof fn);
            dlclose(handle);
            return false;
        }
        /* dlsym answers void *; POSIX makes it a function's address, which
         * memcpy stores without the cast ISO C has no word for */
        memcpy(lib->symbols[i].slot, &fn, sizeof fn);
    }
    return true; /* stays loaded: the slots point into it */
}

bool base_lazylib_open(BaseLazyLib *lib, char *err, size_t errlen)
{
    int state = __atomic_load_n(&lib->state, __ATOMIC_ACQUIRE);
    if (state == 0) {
        pthread_mutex_lock(&opening);
        state = __atomic_load_n(&lib->state, __ATOMIC_RELAXED);
        if (state == 0) {
            state = bind_all(lib) ? 1 : -1;
            __atomic_store_n(&lib->state, state, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&opening);
    }
    if (state > 0) return true;
    return base_error(err, errlen, "%s", lib->failure);
}
