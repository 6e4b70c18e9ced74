/*
 * vm/main.c — the stvm command line (SOM conventions).
 */
#include "gc/heap.h"
#include "profiler/jitdump.h"
#include "profiler/perfmap.h"
#include "vm/boot/boot.h"
#include "vm/jit/runtime.h"
#include "vm/loader/loader.h"
#include "vm/model/frame.h"
#include "vm/model/universe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef STVM_VERSION
#define STVM_VERSION "0.1.0"
#endif
#ifndef STVM_CORE_DIR
#define STVM_CORE_DIR "smalltalk/core"
#endif

/* which of --inline/--no-inline and --tier-up/--no-tier-up is the default
 * follows vm/jit/runtime.h */
#if VM_JIT_INLINE_BY_DEFAULT
#define HELP_INLINE_ON " (the default)"
#define HELP_INLINE_OFF ""
#else
#define HELP_INLINE_ON ""
#define HELP_INLINE_OFF " (the default)"
#endif
#if VM_JIT_WHOLE_LOOPS_BY_DEFAULT
#define HELP_WHOLE_ON " (the default)"
#define HELP_WHOLE_OFF ""
#else
#define HELP_WHOLE_ON ""
#define HELP_WHOLE_OFF " (the default)"
#endif
#if VM_JIT_TIER_UP_BY_DEFAULT
#define HELP_TIER_UP_ON " (the default)"
#define HELP_TIER_UP_OFF ""
#else
#define HELP_TIER_UP_ON ""
#define HELP_TIER_UP_OFF " (the default)"
#endif

static void usage(FILE *out)
{
    fprintf(out,
            "usage: stvm [options] [-cp DIR1:DIR2…] (ClassName | path/to/Class[.som]) [args…]\n"
            "\n"
            "Runs a SOM Smalltalk program: loads the class, creates an instance and sends it\n"
            "run: with the argument array (class name first), or run if it has no run:.\n"
            "Classes are looked up in the classpath directories in order, then in the core\n"
            "library (" STVM_CORE_DIR ").\n"
            "\n"
            "options:\n"
            "  -cp, --classpath DIRS  colon-separated class directories\n"
            "  --heap-size SIZE       total heap limit (default 1G; suffixes K, M, G)\n"
            "  --eden-size SIZE       nursery size (default 4M)\n"
            "  --stack-pages N        stack pages of 64 KiB (default %d, minimum %d)\n"
            "  --max-stack-depth N    stop a program whose stack grows past N frames with\n"
            "                         'stack overflow' (default %d; checked as stack pages\n"
            "                         fill, so within a page's ~1,000 frames of N)\n"
            "  --small                tiny eden and %d stack pages: constant collections,\n"
            "                         page overflows and divorces (testing)\n"
            "  --gc-verify            check the whole heap before and after every collection\n"
            "  --gc-stress            collect at every safe point\n"
            "  --print-stats          print GC and VM counters on stderr at exit\n"
            "  --no-export            do not publish counters for profilers (/dev/shm/stvm-PID)\n"
            "  --export-log-size SIZE the export's code event log, a power of two from 64K\n"
            "                         to 1G (default 4M); profilers that join late need it\n"
            "                         to hold twice the live code's descriptions\n"
            "  --alloc-log-size SIZE  the export's allocation sample log (vmprofd --event\n"
            "                         alloc), a power of two from 64K to 1G (default 8M)\n"
            "  --no-alloc-log         publish no allocation sample log (nobody can ask\n"
            "                         this VM for allocation samples)\n"
            "  --code-log-truth FILE  write every code load, move and free with its time to\n"
            "                         FILE (for testing profilers)\n"
            "  --jit                  compile hot methods to x86-64 (the default)\n"
            "  --no-jit               interpret only\n"
            "  --jit-threshold N      compile a method when it has run N times (default 2);\n"
            "                         each backward jump counts as a run, and a loop\n"
            "                         then continues in machine code\n"
            "  --inline               inline small monomorphic callees at sends, with\n"
            "                         deoptimization to the interpreter" HELP_INLINE_ON "\n"
            "  --no-inline            do not" HELP_INLINE_OFF "\n"
            "  --tier-up-after N      with inlining, recompile a method that had sends without\n"
            "                         feedback after N more invocations, its machine code's\n"
            "                         linked sends as the feedback (default 1000)\n"
            "  --tier-up              tier-up on (with inlining)" HELP_TIER_UP_ON "\n"
            "  --no-tier-up           no tier-up" HELP_TIER_UP_OFF "\n"
            "  --inline-budget N      inline callees of at most N bytecode bytes (default 48;\n"
            "                         implies --inline)\n"
            "  --whole-loops          compile innermost counted loops of Double work whole as\n"
            "                         well: values in registers, one class test per value,\n"
            "                         a failed test redoes the iteration in the plain code" HELP_WHOLE_ON "\n"
            "  --no-whole-loops       do not" HELP_WHOLE_OFF "\n"
            "  --deopt-every N        an inlined body deoptimizes at every Nth bytecode it\n"
            "                         starts, and a whole loop leaves every Nth iteration\n"
            "                         to the plain code (a stress mode; testing)\n"
            "  --code-size SIZE       machine-code zone (default 1M)\n"
            "  --jit-verify           check every send site, PIC and map after each link,\n"
            "                         unlink and compaction (slow; testing)\n"
            "  --code-zone-stats      print the code zone analysis on stderr at exit:\n"
            "                         methods, PICs, send sites by state, compactions\n"
            "  --perf-map             write /tmp/perf-PID.map naming the JIT's code for perf\n"
            "                         (append-only: moved and freed code keeps stale lines)\n"
            "  --jitdump              write jit-PID.dump in the current directory for\n"
            "                         perf inject --jit (record with perf record -k 1)\n"
            "  --jitdump-dir DIR      the same, in DIR\n"
            "                         (with --no-jit both files are written, naming no code)\n"
            "  --snapshot FILE        compile the core library and save the booted heap to\n"
            "                         FILE, then run the program if one is given\n"
            "  --from-snapshot FILE   boot from FILE instead of the default snapshot\n"
            "  --no-snapshot          compile the core library from source; neither read nor\n"
            "                         write the default snapshot (" STVM_CORE_DIR ".snapshot)\n"
            "  --disassemble 'Class>>selector'\n"
            "                         compile that method (or 'Class class>>selector')\n"
            "                         and print its decorated machine code, then exit\n"
            "  --disassemble-after 'Class>>selector'\n"
            "                         run the program, then print that method's machine code\n"
            "                         as the run compiled it (inlined sends need the run's\n"
            "                         send-site feedback)\n"
            "  --help                 this text\n"
            "  --version              print the version\n",
            VM_STACK_PAGES_DEFAULT, VM_STACK_PAGES_MIN, VM_MAX_STACK_DEPTH_DEFAULT, VM_STACK_PAGES_SMALL);
}

static _Noreturn void bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "stvm: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try 'stvm --help')\n");
    exit(2);
}

static bool parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-') return false;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return false;
    *out = (size_t)v;
    return true;
}

static const char *need_arg(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) bad_usage("option '%s' needs a value", argv[*i]);
    return argv[++*i];
}

/* --perf-map, --jitdump: the sinks hear of code from now on, and of the
 * trampolines vm_boot made through the replay. */
static bool open_perf_files(bool map, bool dump, const char *dir, bool no_jit)
{
    char err[600];
    const ProfCodeSink *s;
    if (map) {
        if (!(s = prof_perfmap_open(NULL, err, sizeof err))) goto fail;
        if (!prof_code_sink_add(s)) goto full;
        prof_code_replay(s);
    }
    if (dump) {
        if (!(s = prof_jitdump_open(dir, err, sizeof err))) goto fail;
        if (!prof_code_sink_add(s)) goto full;
        prof_code_replay(s);
    }
    if ((map || dump) && no_jit)
        fprintf(stderr, "stvm: note: with --no-jit nothing is compiled: %s%s%s will list no code\n",
                map ? prof_perfmap_path() : "", map && dump ? " and " : "", dump ? prof_jitdump_path() : "");
    return true;
full:
    snprintf(err, sizeof err, "no room for the %s among the code event sinks", s->name);
fail:
    fprintf(stderr, "stvm: %s\n", err);
    return false;
}

static void add_classpath(VmOptions *o, const char *dirs, bool front)
{
    char *copy = strdup(dirs);
    for (char *tok = strtok(copy, ":"); tok; tok = strtok(NULL, ":")) {
        struct stat st;
        if (stat(tok, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "stvm: classpath entry '%s' is not a directory\n", tok);
            exit(2);
        }
        o->classpath = realloc(o->classpath, (o->nclasspath + 1) * sizeof(char *));
        if (front) {
            memmove(o->classpath + 1, o->classpath, o->nclasspath * sizeof(char *));
            o->classpath[0] = strdup(tok);
        } else {
            o->classpath[o->nclasspath] = strdup(tok);
        }
        o->nclasspath++;
    }
    free(copy);
}

int main(int argc, char **argv)
{
    VmOptions o = {
        .heap_bytes = GC_HEAP_DEFAULT_BYTES,
        .eden_bytes = GC_EDEN_DEFAULT_BYTES,
        .stack_pages = VM_STACK_PAGES_DEFAULT,
        .max_stack_depth = VM_MAX_STACK_DEPTH_DEFAULT,
        /* the booted core library, beside its sources (vm/boot/snapshot.h) */
        .snapshot_mode = VM_SNAPSHOT_DEFAULT,
        .snapshot_path = STVM_CORE_DIR ".snapshot",
        .core_dir = STVM_CORE_DIR,
    };
    bool eden_set = false, pages_set = false;
    bool perf_map = false, jitdump = false;
    const char *jitdump_dir = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("stvm " STVM_VERSION "\n");
            return 0;
        } else if (!strcmp(a, "-cp") || !strcmp(a, "--classpath")) {
            add_classpath(&o, need_arg(argc, argv, &i), false);
        } else if (!strcmp(a, "--heap-size")) {
            const char *v = need_arg(argc, argv, &i);
            if (!parse_size(v, &o.heap_bytes) || o.heap_bytes < (8u << 20))
                bad_usage("--heap-size needs a size of at least 8M, like 512M or 2G, not '%s'", v);
        } else if (!strcmp(a, "--eden-size")) {
            const char *v = need_arg(argc, argv, &i);
            if (!parse_size(v, &o.eden_bytes) || o.eden_bytes < (16u << 10))
                bad_usage("--eden-size needs a size of at least 16K, like 4M, not '%s'", v);
            eden_set = true;
        } else if (!strcmp(a, "--stack-pages")) {
            const char *v = need_arg(argc, argv, &i);
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < VM_STACK_PAGES_MIN || n > 100000)
                bad_usage("--stack-pages needs a number from 2 to 100000, not '%s'", v);
            o.stack_pages = (int)n;
            pages_set = true;
        } else if (!strcmp(a, "--max-stack-depth")) {
            const char *v = need_arg(argc, argv, &i);
            char *end;
            errno = 0;
            long long n = strtoll(v, &end, 10);
            if (*end || errno || n < 100 || n > 1000000000)
                bad_usage("--max-stack-depth needs a number of frames from 100 to 1000000000, not '%s'", v);
            o.max_stack_depth = (size_t)n;
        } else if (!strcmp(a, "--gc-verify")) {
            o.gc_verify = true;
        } else if (!strcmp(a, "--gc-stress")) {
            o.gc_stress = true;
        } else if (!strcmp(a, "--small")) {
            o.small = true;
        } else if (!strcmp(a, "--no-export")) {
            o.no_export = true;
        } else if (!strcmp(a, "--export-log-size")) {
            const char *v = need_arg(argc, argv, &i);
            if (!parse_size(v, &o.export_log_bytes) || o.export_log_bytes < (64u << 10) ||
                o.export_log_bytes > (1u << 30) || (o.export_log_bytes & (o.export_log_bytes - 1)))
                bad_usage("--export-log-size needs a power of two from 64K to 1G, like 4M, not '%s'", v);
        } else if (!strcmp(a, "--alloc-log-size")) {
            const char *v = need_arg(argc, argv, &i);
            if (!parse_size(v, &o.alloc_log_bytes) || o.alloc_log_bytes < (64u << 10) || o.alloc_log_bytes > (1u << 30) ||
                (o.alloc_log_bytes & (o.alloc_log_bytes - 1)))
                bad_usage("--alloc-log-size needs a power of two from 64K to 1G, like 8M, not '%s'", v);
        } else if (!strcmp(a, "--no-alloc-log")) {
            o.no_alloc_log = true;
        } else if (!strcmp(a, "--code-log-truth")) {
            o.code_log_truth = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "--print-stats")) {
            o.print_stats = true;
        } else if (!strcmp(a, "--no-jit")) {
            o.no_jit = true;
        } else if (!strcmp(a, "--jit")) {
            o.no_jit = false;
        } else if (!strcmp(a, "--jit-threshold")) {
            const char *v = need_arg(argc, argv, &i);
            char *end;
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 1000000) bad_usage("--jit-threshold needs a number from 1 to 1000000, not '%s'", v);
            o.jit_threshold = (int)t;
        } else if (!strcmp(a, "--inline")) {
            o.no_inline = false;
            if (!o.inline_budget) o.inline_budget = -1;
        } else if (!strcmp(a, "--no-inline")) {
            o.no_inline = true;
        } else if (!strcmp(a, "--tier-up")) {
            o.no_tier_up = false;
            if (!o.tier_up_after) o.tier_up_after = -1;
        } else if (!strcmp(a, "--no-tier-up")) {
            o.no_tier_up = true;
        } else if (!strcmp(a, "--whole-loops")) {
            o.whole_loops = 1;
        } else if (!strcmp(a, "--no-whole-loops")) {
            o.whole_loops = -1;
        } else if (!strcmp(a, "--tier-up-after")) {
            const char *v = need_arg(argc, argv, &i);
            char *end;
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 1000000) bad_usage("--tier-up-after needs a number from 1 to 1000000, not '%s'", v);
            o.tier_up_after = (int)t;
            o.no_tier_up = false;
        } else if (!strcmp(a, "--inline-budget") || !strcmp(a, "--deopt-every")) {
            const char *v = need_arg(argc, argv, &i);
            char *end;
            long t = strtol(v, &end, 10);
            if (*end || t < 1 || t > 1000000) bad_usage("%s needs a number from 1 to 1000000", a);
            if (!strcmp(a, "--inline-budget")) o.inline_budget = (int)t;
            else o.deopt_every = (int)t;
        } else if (!strcmp(a, "--jit-verify")) {
            o.jit_verify = true;
        } else if (!strcmp(a, "--code-zone-stats")) {
            o.code_zone_stats = true;
        } else if (!strcmp(a, "--perf-map")) {
            perf_map = true;
        } else if (!strcmp(a, "--jitdump")) {
            jitdump = true;
        } else if (!strcmp(a, "--jitdump-dir")) {
            jitdump_dir = need_arg(argc, argv, &i);
            jitdump = true;
        } else if (!strcmp(a, "--snapshot")) {
            o.snapshot_path = need_arg(argc, argv, &i);
            o.snapshot_mode = VM_SNAPSHOT_WRITE;
        } else if (!strcmp(a, "--from-snapshot")) {
            o.snapshot_path = need_arg(argc, argv, &i);
            o.snapshot_mode = VM_SNAPSHOT_READ;
        } else if (!strcmp(a, "--no-snapshot")) {
            o.snapshot_mode = VM_SNAPSHOT_NONE;
        } else if (!strcmp(a, "--disassemble-after")) {
            o.disassemble_after = need_arg(argc, argv, &i);
        } else if (!strcmp(a, "--disassemble")) {
            o.disassemble = need_arg(argc, argv, &i);
            if (!strstr(o.disassemble, ">>"))
                bad_usage("--disassemble needs 'Class>>selector' (or 'Class class>>selector'), not '%s'",
                          o.disassemble);
        } else if (!strcmp(a, "--code-size")) {
            const char *v = need_arg(argc, argv, &i);
            if (!parse_size(v, &o.code_bytes) || o.code_bytes < (64u << 10) || o.code_bytes > (1u << 30))
                bad_usage("--code-size needs a size from 64K to 1G, like 1M, not '%s'", v);
        } else if (!strcmp(a, "--")) {
            i++;
            break;
        } else {
            bad_usage("unknown option '%s'", a);
        }
    }
    if (o.small) {
        if (!eden_set) o.eden_bytes = GC_EDEN_SMALL_BYTES;
        if (!pages_set) o.stack_pages = VM_STACK_PAGES_SMALL;
    }
    if (o.eden_bytes * 2 > o.heap_bytes) bad_usage("--eden-size must be less than half of --heap-size%s", "");
    if (i >= argc && o.disassemble) {
        /* nothing to run: compile, print, exit */
        add_classpath(&o, STVM_CORE_DIR, false);
        char err[512];
        if (!vm_boot(&o, err, sizeof err) || !vm_jit_disassemble(o.disassemble, stdout, err, sizeof err)) {
            fprintf(stderr, "stvm: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (i >= argc && o.snapshot_mode == VM_SNAPSHOT_WRITE) {
        /* nothing to run: boot from source, which writes the snapshot */
        add_classpath(&o, STVM_CORE_DIR, false);
        char err[700];
        if (!vm_boot(&o, err, sizeof err)) {
            fprintf(stderr, "stvm: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (i >= argc) {
        fprintf(stderr, "stvm: no class to run\n");
        usage(stderr);
        return 2;
    }

    /* "dir/Foo.som" runs class Foo with dir first on the classpath; so does
     * "dir/Foo" when there is no file dir/Foo (a name with a slash is a
     * path, never a class name) */
    size_t plen = strlen(argv[i]);
    char *prog = malloc(plen + 5);
    if (!prog) {
        fprintf(stderr, "stvm: out of memory\n");
        return 1;
    }
    memcpy(prog, argv[i], plen + 1);
    char *cls = prog;
    bool som = plen > 4 && !strcmp(prog + plen - 4, ".som");
    if (!som && strchr(prog, '/')) {
        struct stat st;
        if (stat(prog, &st) == 0 && S_ISREG(st.st_mode)) {
            fprintf(stderr, "stvm: cannot run '%s': a class file's name ends in .som\n", prog);
            return 1;
        }
        memcpy(prog + plen, ".som", 5);
        plen += 4;
        if (stat(prog, &st) != 0) {
            fprintf(stderr, "stvm: cannot open '%s' or '%s': %s\n", argv[i], prog, strerror(errno));
            return 1;
        }
        som = true;
    }
    if (som) {
        FILE *f = fopen(prog, "r");
        if (!f) {
            fprintf(stderr, "stvm: cannot open '%s': %s\n", prog, strerror(errno));
            return 1;
        }
        fclose(f);
        prog[plen - 4] = 0;
        char *slash = strrchr(prog, '/');
        if (slash) {
            *slash = 0;
            cls = slash + 1;
            add_classpath(&o, prog[0] ? prog : "/", true);
        } else {
            add_classpath(&o, ".", true);
        }
    }
    add_classpath(&o, STVM_CORE_DIR, false);

    char err[512];
    if (!vm_boot(&o, err, sizeof err)) {
        fprintf(stderr, "stvm: %s\n", err);
        return 1;
    }
    if (!open_perf_files(perf_map, jitdump, jitdump_dir, o.no_jit)) return 1;
    if (o.disassemble) {
        if (!vm_jit_disassemble(o.disassemble, stdout, err, sizeof err)) {
            fprintf(stderr, "stvm: %s\n", err);
            return 1;
        }
        return 0;
    }
    if (!vm_load_class(cls)) {
        fprintf(stderr, "stvm: class '%s' not found: no %s.som in", cls, cls);
        for (size_t k = 0; k < o.nclasspath; k++) fprintf(stderr, "%s %s", k ? "," : "", o.classpath[k]);
        fprintf(stderr, "\n");
        return 1;
    }
    argv[i] = cls;
    return vm_run(argc - i, argv + i);
}
