/*
 * The machine facts a coding agent writes into its prompt, made the same on every machine and
 * every day: agent.sh preloads this into each agent (LD_PRELOAD).
 *
 * Claude Code tells the model `os.type() os.release()` (the kernel release) and the month,
 * Gemini CLI the weekday and the date; harness counts the bytes of every request, so the
 * scorecard's tokens and costs moved with the kernel of the machine and the day of the week.
 * Here the kernel release reads FIXED_ENV_RELEASE and the wall clock is moved by
 * FIXED_ENV_OFFSET seconds (agent.sh sets it so that the run starts on a fixed day; time
 * still passes, and the monotonic clocks every timeout uses are left alone).
 *
 * Built by agent.sh with the machine's C compiler: cc -shared -fPIC -o fixed_env.so fixed_env.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>

static long offset(void) {
    const char *s = getenv("FIXED_ENV_OFFSET");
    return s ? strtol(s, NULL, 10) : 0;
}

static int realtime(clockid_t id) {
    return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    static int (*real)(clockid_t, struct timespec *);
    if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real(id, ts);
    if (rc == 0 && realtime(id)) ts->tv_sec += offset();
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    static int (*real)(struct timeval *restrict, void *restrict);
    if (!real) real = (int (*)(struct timeval *restrict, void *restrict))dlsym(RTLD_NEXT, "gettimeofday");
    int rc = real(tv, tz);
    if (rc == 0) tv->tv_sec += offset();
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}

int uname(struct utsname *buf) {
    static int (*real)(struct utsname *);
    if (!real) real = (int (*)(struct utsname *))dlsym(RTLD_NEXT, "uname");
    int rc = real(buf);
    const char *release = getenv("FIXED_ENV_RELEASE");
    if (rc == 0 && release) {
        strncpy(buf->release, release, sizeof buf->release - 1);
        buf->release[sizeof buf->release - 1] = '\0';
        strncpy(buf->version, "#1 SMP", sizeof buf->version - 1);
        buf->version[sizeof buf->version - 1] = '\0';
    }
    return rc;
}
