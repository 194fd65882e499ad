/* A JVMPI agent of the kind JVMPI's specification draws (section 1.5): it counts each
 * thread's method entries and exits in its thread-local storage and prints the totals at
 * JVM_SHUT_DOWN. bench/run.sh runs it through jlive's JVMPI shim (issue 25: it should cost no
 * more than jlive's own capture=events). Written for jlive's benchmark; built by run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <jni.h>
#include "jvmpi.h"

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static long total_entries, total_exits;

typedef struct { long entries, exits; } Counts;

static Counts *counts(JNIEnv *env) {
    Counts *c = jvmpi->GetThreadLocalStorage(env);
    if (c == NULL) {
        c = calloc(1, sizeof *c);
        jvmpi->SetThreadLocalStorage(env, c);
    }
    return c;
}

static void fold(Counts *c) {
    jvmpi->RawMonitorEnter(lock);
    total_entries += c->entries;
    total_exits += c->exits;
    c->entries = c->exits = 0;
    jvmpi->RawMonitorExit(lock);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_METHOD_ENTRY: counts(e->env_id)->entries++; break;
    case JVMPI_EVENT_METHOD_EXIT: counts(e->env_id)->exits++; break;
    case JVMPI_EVENT_THREAD_END: fold(counts(e->env_id)); break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        fold(counts(e->env_id));
        fprintf(stderr, "jvmpi_counter: %ld entries, %ld exits\n", total_entries, total_exits);
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)options;
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_counts");
    jvmpi->EnableEvent(JVMPI_EVENT_METHOD_ENTRY, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_METHOD_EXIT, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_THREAD_END, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    return JNI_OK;
}
