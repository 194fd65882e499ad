/*
 * trace: the sample user trace library (VA/Java's "trace" sample, written anew for jlive).
 * It writes every event it gets as one readable line to $TRACE_FILE (default
 * trace-<vmID>.txt in the JVM's working directory):
 *
 *   begin flags=0x111
 *   [main] > Fib.fib (static) depth=2
 *   [main] < Fib.fib (static) depth=2
 *   alloc #412 Fib$Node (8 words)
 *   alloc #413 int[] (6 words)
 *   gc full start / gc full end / gc young start / gc young end
 *   delete #412
 *   user "checkout begins"
 *   object #17 Fib$Node -> #18 #19
 *   end
 *
 * Build: gcc -shared -fPIC -O2 -Iinclude -o libtrace.so trace.c -lpthread
 * Use:   java -agentpath:/path/libjlive.so=plugin=/path/libtrace.so -cp ... Main
 *   or   InstrumentVMSupport.tracingStartup("trace") with libtrace.so on java.library.path.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "itrcstrt.h"

static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The thread's name, asked once per thread (the support library's one function). */
static __thread char thread_name[48];
static __thread int named;

unsigned long InstrumentTraceStartup(unsigned long vmID) {
    char fallback[64];
    const char *path = getenv("TRACE_FILE");
    if (path == NULL) {
        snprintf(fallback, sizeof fallback, "trace-%lu.txt", vmID);
        path = fallback;
    }
    out = fopen(path, "w");
    return out == NULL; /* non-zero: jlive says so and does not use the library */
}

unsigned long InstrumentTraceShutdown(void) {
    if (out != NULL) {
        fclose(out);
        out = NULL;
    }
    return 0;
}

unsigned long InstrumentTraceBegin(unsigned long vmID, unsigned long flags) {
    (void)vmID;
    pthread_mutex_lock(&lock);
    fprintf(out, "begin flags=0x%lx\n", flags);
    pthread_mutex_unlock(&lock);
    return 0;
}

unsigned long InstrumentTraceEnd(void) {
    pthread_mutex_lock(&lock);
    fprintf(out, "end\n");
    fflush(out);
    pthread_mutex_unlock(&lock);
    return 0;
}

static const char *name_of_thread(unsigned long vmID) {
    if (!named) {
        unsigned long flags, length, group_length;
        char *name, *group;
        long priority;
        named = 1;
        if (InstrumentSupportCurrentThreadDetails(vmID, &flags, &name, &length, &priority,
                                                  &group, &group_length) == 0)
            snprintf(thread_name, sizeof thread_name, "%.*s", (int)length, name);
    }
    return thread_name;
}

static void method(struct InsEventInfo *e, char arrow) {
    struct InsEventTypeMethod *m = &e->eventBody.method;
    fprintf(out, "[%s] %c %.*s.%.*s%s%s%s depth=%lu\n", name_of_thread(e->header.vmID), arrow,
            (int)m->classNameSize, m->className, (int)m->methodNameSize, m->methodName,
            m->methodEventFlags & InstrumentMethodEventStatic ? " (static)" : "",
            m->methodEventFlags & InstrumentMethodEventSync ? " (synchronized)" : "",
            m->methodEventFlags & InstrumentMethodEventNative ? " (native)" : "", m->stackDepth);
}

unsigned long InstrumentTraceEvent(struct InsEventInfo *e) {
    struct InsEventTypeAllocate *a = &e->eventBody.allocate;
    pthread_mutex_lock(&lock);
    switch (e->header.event) {
    case InsTrcEventMethodEnter: method(e, '>'); break;
    case InsTrcEventMethodLeave: method(e, '<'); break;
    case InsTrcEventAllocate:
        if (a->arrayFlag) {
            fprintf(out, "alloc #%lu %.*s", a->oid, (int)a->allocBody.array.classNameSize,
                    a->allocBody.array.className);
            for (unsigned long i = 0; i < a->allocBody.array.arity; i++) fputs("[]", out);
        } else {
            fprintf(out, "alloc #%lu %.*s", a->oid, (int)a->allocBody.object.classNameSize,
                    a->allocBody.object.className);
        }
        fprintf(out, " (%lu words)\n", a->sizeInLongs);
        break;
    case InsTrcEventScavengeStart: fputs("gc young start\n", out); break;
    case InsTrcEventScavengeEnd: fputs("gc young end\n", out); break;
    case InsTrcEventGGCStart: fputs("gc full start\n", out); break;
    case InsTrcEventGGCEnd: fputs("gc full end\n", out); break;
    case InsTrcEventOIDDelete: fprintf(out, "delete #%lu\n", e->eventBody.oidDelete.oid); break;
    case InsTrcEventUserEvent:
        fprintf(out, "user \"%.*s\"\n", (int)e->eventBody.userEvent.msgSize, e->eventBody.userEvent.msg);
        break;
    case InsTrcEventStartFieldReport:
        fprintf(out, "object #%lu %.*s ->", e->eventBody.startFieldReport.oid,
                (int)e->eventBody.startFieldReport.classNameSize,
                e->eventBody.startFieldReport.className);
        break;
    case InsTrcEventFieldReport: fprintf(out, " #%lu", e->eventBody.fieldReport.oid); break;
    case InsTrcEventEndFieldReport: fputc('\n', out); break;
    }
    pthread_mutex_unlock(&lock);
    return 0;
}
