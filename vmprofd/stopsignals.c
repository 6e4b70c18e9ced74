#include "vmprofd/stopsignals.h"

#include <string.h>

static volatile sig_atomic_t stop_signal;
static volatile pid_t forward_pid;
static volatile sig_atomic_t forwarded_signal;

static void on_stop_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (forward_pid > 0) {
        /* A terminal's Ctrl-C or hang-up (SI_KERNEL) reached COMMAND's
         * process group already: passing it again would deliver it twice. */
        if (!si || si->si_code != SI_KERNEL) {
            kill(forward_pid, sig);
            forwarded_signal = sig;
        }
        return;
    }
    stop_signal = sig;
}

void vmprofd_stopsignals_install(void)
{
    stop_signal = 0;
    forward_pid = 0;
    forwarded_signal = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_stop_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    /* No SA_RESTART: a signal must cut a poll or waitpid short. */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
}

void vmprofd_stopsignals_restore(void)
{
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
}

const volatile sig_atomic_t *vmprofd_stopsignals_flag(void) { return &stop_signal; }

void vmprofd_stopsignals_forward_to(pid_t pid) { forward_pid = pid; }

int vmprofd_stopsignals_forwarded(void) { return forwarded_signal; }
