/*
 * tests/fuzz/replay_main.c — a main for the harnesses in the normal (gcc)
 * build: runs LLVMFuzzerTestOneInput once on each file named on the command
 * line, or on each file of a directory named there, so ctest replays the
 * committed corpora without libFuzzer.
 *
 *   fuzz_<harness> FILE|DIR…
 *
 * Exits 0 when every input ran (a crash is the sanitizer's or the
 * signal's exit status), 1 when a file cannot be read or nothing was
 * given.
 */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return false;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *b = realloc(buf, cap);
            if (!b) {
                fprintf(stderr, "%s: out of memory\n", path);
                free(buf);
                fclose(f);
                return false;
            }
            buf = b;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    bool ok = !ferror(f);
    fclose(f);
    if (!ok) {
        fprintf(stderr, "%s: read error\n", path);
    } else {
        /* a copy of exactly len bytes, as libFuzzer passes it: ASan then
         * sees a read one past the input */
        uint8_t *exact = malloc(len ? len : 1);
        if (!exact) {
            ok = false;
        } else {
            memcpy(exact, buf, len);
            LLVMFuzzerTestOneInput(exact, len);
            free(exact);
        }
    }
    free(buf);
    return ok;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order (a failure then names the same
 * input on every machine). */
static bool replay_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s: %s\n", dir, strerror(errno));
        return false;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    bool ok = true;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                ok = false;
                break;
            }
            names = nn;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) {
            ok = false;
            break;
        }
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (ok && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            ok = replay_file(names[i]) && ok;
            (*count)++;
        }
        free(names[i]);
    }
    free(names);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR…\n", argv[0]);
        return 1;
    }
    bool ok = true;
    size_t count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
            ok = false;
        } else if (S_ISDIR(st.st_mode)) {
            ok = replay_dir(argv[i], &count) && ok;
        } else {
            ok = replay_file(argv[i]) && ok;
            count++;
        }
    }
    printf("%s: replayed %zu inputs\n", argv[0], count);
    return ok && count > 0 ? 0 : 1;
}
