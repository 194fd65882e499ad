/*
 * A user trace library for the tests: counts what examples/UserTrace.java does, as the
 * events say it, and writes the counts (key=value, one per line) to $COUNT_OUT at
 * InstrumentTraceShutdown. Built by tests/plugin.rs with gcc against examples/trace/include.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "itrcstrt.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned long startups, begins, ends, begin_flags, last_flags, vm;
static unsigned long fib_enter, fib_leave, fib_depth_sum, fib_min = ~0UL, fib_max, fib_not_static;
static unsigned long add_enter, add_sync, add_static, add_receivers, add_zero, add_receiver;
static unsigned long payloads, payload_longs, payload_arrays, array_longs, array_arity_bad;
static unsigned long deleted, ggc_start, ggc_end, scav_start, scav_end, user_events;
static unsigned long reported, reported_twice, tree_objects, nodes_allocated, tree_ids_known;
static unsigned long classes_reported, arrays_reported, reverse_enter, reverse_leave;
static char thread_name[64], group_name[64];
static long thread_priority = -2;

/* Object IDs: the payloads and their arrays, the nodes allocated, every object reported. */
struct set { unsigned long *v; size_t n, cap; };
static struct set dropped, nodes, members;
struct edge { unsigned long from, to; };
static struct edge *edges;
static size_t n_edges, cap_edges;
static unsigned long reporting; /* the object whose fields come now, if a tree member */

static void add(struct set *s, unsigned long v) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = v;
}

static int has(const struct set *s, unsigned long v) {
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == v) return 1;
    return 0;
}

static int is(const char *p, unsigned long n, const char *text) {
    return p != NULL && n == strlen(text) && memcmp(p, text, n) == 0;
}

unsigned long InstrumentTraceStartup(unsigned long vmID) {
    startups++;
    vm = vmID;
    return 0;
}

unsigned long InstrumentTraceBegin(unsigned long vmID, unsigned long flags) {
    (void)vmID;
    if (begins++ == 0) begin_flags = flags;
    last_flags = flags;
    return 0;
}

unsigned long InstrumentTraceEnd(void) {
    ends++;
    return 0;
}

static void method(struct InsEventInfo *e, int enter) {
    struct InsEventTypeMethod *m = &e->eventBody.method;
    if (is(m->methodName, m->methodNameSize, "reverseBytes")
        && (is(m->className, m->classNameSize, "java/lang/Integer")
            || is(m->className, m->classNameSize, "java.lang.Integer"))) {
        if (enter) reverse_enter++; else reverse_leave++;
        return;
    }
    if (!is(m->className, m->classNameSize, "UserTrace")
        && !is(m->className, m->classNameSize, "UserTrace$Counter"))
        return;
    if (is(m->methodName, m->methodNameSize, "fib")) {
        if (!(m->methodEventFlags & InstrumentMethodEventStatic)) fib_not_static++;
        if (!enter) {
            fib_leave++;
            return;
        }
        if (fib_enter++ == 0) {
            unsigned long flags, nl, gl;
            char *n, *g;
            long prio;
            if (InstrumentSupportCurrentThreadDetails(e->header.vmID, &flags, &n, &nl, &prio, &g, &gl) == 0) {
                snprintf(thread_name, sizeof thread_name, "%.*s", (int)nl, n);
                snprintf(group_name, sizeof group_name, "%.*s", (int)gl, g);
                thread_priority = prio;
            }
        }
        fib_depth_sum += m->stackDepth;
        if (m->stackDepth < fib_min) fib_min = m->stackDepth;
        if (m->stackDepth > fib_max) fib_max = m->stackDepth;
    } else if (enter && is(m->methodName, m->methodNameSize, "add")) {
        add_enter++;
        if (m->methodEventFlags & InstrumentMethodEventSync) add_sync++;
        if (m->methodEventFlags & InstrumentMethodEventStatic) add_static++;
        if (m->receiver == 0) add_zero++;
        if (add_receivers == 0 || m->receiver != add_receiver) add_receivers++;
        add_receiver = m->receiver;
    }
}

static void allocate(struct InsEventTypeAllocate *a) {
    if (a->arrayFlag == 0) {
        struct InsEventTypeAllocObj *o = &a->allocBody.object;
        if (is(o->className, o->classNameSize, "UserTrace$Payload")) {
            payloads++;
            payload_longs = a->sizeInLongs;
            add(&dropped, a->oid);
        } else if (is(o->className, o->classNameSize, "UserTrace$Node")) {
            nodes_allocated++;
            add(&nodes, a->oid);
        }
    } else {
        struct InsEventTypeAllocArrObj *r = &a->allocBody.array;
        if (is(r->className, r->classNameSize, "UserTrace$Payload")) {
            payload_arrays++;
            array_longs = a->sizeInLongs;
            if (r->arity != 1) array_arity_bad++;
            add(&dropped, a->oid);
        } else if (is(r->className, r->classNameSize, "UserTrace$Node")) {
            add(&nodes, a->oid);
        }
    }
}

unsigned long InstrumentTraceEvent(struct InsEventInfo *e) {
    pthread_mutex_lock(&lock);
    switch (e->header.event) {
    case InsTrcEventMethodEnter: method(e, 1); break;
    case InsTrcEventMethodLeave: method(e, 0); break;
    case InsTrcEventAllocate: allocate(&e->eventBody.allocate); break;
    case InsTrcEventOIDDelete:
        if (has(&dropped, e->eventBody.oidDelete.oid)) deleted++;
        break;
    case InsTrcEventGGCStart: ggc_start++; break;
    case InsTrcEventGGCEnd: ggc_end++; break;
    case InsTrcEventScavengeStart: scav_start++; break;
    case InsTrcEventScavengeEnd: scav_end++; break;
    case InsTrcEventUserEvent:
        if (e->eventBody.userEvent.msgSize >= 20
            && memcmp(e->eventBody.userEvent.msg, "hello from UserTrace", 20) == 0)
            user_events++;
        break;
    case InsTrcEventStartFieldReport: {
        struct InsEventTypeStartFieldReport *s = &e->eventBody.startFieldReport;
        reported++;
        if (s->type == InstrumentFREventTypeJavaClass) classes_reported++;
        if (s->type == InstrumentFREventTypeJavaArray) arrays_reported++;
        reporting = 0;
        if (is(s->className, s->classNameSize, "UserTrace$Node")
            || is(s->className, s->classNameSize, "[LUserTrace$Node;")) {
            if (has(&members, s->oid)) reported_twice++;
            add(&members, s->oid);
            tree_objects++;
            if (has(&nodes, s->oid)) tree_ids_known++;
            reporting = s->oid;
        }
        break;
    }
    case InsTrcEventFieldReport:
        if (reporting != 0) {
            if (n_edges == cap_edges) {
                cap_edges = cap_edges ? 2 * cap_edges : 64;
                edges = realloc(edges, cap_edges * sizeof *edges);
            }
            edges[n_edges].from = reporting;
            edges[n_edges++].to = e->eventBody.fieldReport.oid;
        }
        break;
    case InsTrcEventEndFieldReport: reporting = 0; break;
    }
    pthread_mutex_unlock(&lock);
    return 0;
}

unsigned long InstrumentTraceShutdown(void) {
    unsigned long tree_refs = 0;
    for (size_t i = 0; i < n_edges; i++)
        if (has(&members, edges[i].to)) tree_refs++;
    const char *path = getenv("COUNT_OUT");
    FILE *out = path ? fopen(path, "w") : stdout;
    if (out == NULL) return 1;
    fprintf(out,
            "startups=%lu\nbegins=%lu\nends=%lu\nbegin_flags=%lu\nlast_flags=%lu\nvm=%lu\n"
            "fib_enter=%lu\nfib_leave=%lu\nfib_depth_sum=%lu\nfib_min=%lu\nfib_max=%lu\n"
            "fib_not_static=%lu\nadd_enter=%lu\nadd_sync=%lu\nadd_static=%lu\n"
            "add_receivers=%lu\nadd_zero=%lu\npayloads=%lu\npayload_longs=%lu\n"
            "payload_arrays=%lu\narray_longs=%lu\narray_arity_bad=%lu\ndeleted=%lu\n"
            "ggc_start=%lu\nggc_end=%lu\nscav_start=%lu\nscav_end=%lu\nuser_events=%lu\n"
            "reported=%lu\nclasses_reported=%lu\narrays_reported=%lu\ntree_objects=%lu\n"
            "reported_twice=%lu\ntree_refs=%lu\ntree_ids_known=%lu\nnodes_allocated=%lu\n"
            "thread=%s\npriority=%ld\ngroup=%s\nreverse_enter=%lu\nreverse_leave=%lu\n",
            startups, begins, ends, begin_flags, last_flags, vm, fib_enter, fib_leave, fib_depth_sum,
            fib_min, fib_max, fib_not_static, add_enter, add_sync, add_static, add_receivers,
            add_zero, payloads, payload_longs, payload_arrays, array_longs, array_arity_bad,
            deleted, ggc_start, ggc_end, scav_start, scav_end, user_events, reported,
            classes_reported, arrays_reported, tree_objects, reported_twice, tree_refs,
            tree_ids_known, nodes_allocated, thread_name, thread_priority, group_name,
            reverse_enter, reverse_leave);
    if (out != stdout) fclose(out);
    return 0;
}
