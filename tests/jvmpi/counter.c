/*
 * A JVMPI agent as JDK 1.2-5 agents were written, for tests/jvmpi.rs: it enables most events
 * in JVM_OnLoad, learns examples/Legacy's classes and methods from CLASS_LOAD, counts what
 * Legacy does, exercises the interface functions, and at JVM_SHUT_DOWN writes key=value
 * lines to the file named by its option "out=PATH".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jni.h>
#include "jvmpi.h"

static JVMPI_Interface *jvmpi;
static JVMPI_RawMonitor lock;
static char out_path[1024];

#define MAX_IDS 4096
static jobjectID node_ids[MAX_IDS];
static int node_count;
static jobjectID gate_ids[64];
static int gate_count;

static jobjectID legacy_class, node_class, gate_class;
static jmethodID work_mid, spin_mid, touch_mid, hot_mid, main_mid;
static int work_start, work_end;

static long counts[64];
enum {
    C_INIT, C_SHUTDOWN, C_ARENA, C_CLASS_LOAD_LEGACY, C_WORK_ENTRY, C_WORK_EXIT, C_TOUCH_RECEIVER,
    C_TOUCH_STATIC_NULL, C_NODE_ALLOC, C_NODE_ARRAY, C_NODE_FREE, C_GC_START, C_GC_FINISH,
    C_GC_BAD_INFO, C_WORKER_START, C_WORKER_END, C_SPIN_TLS, C_WAIT20, C_WAITED, C_CONTEND,
    C_CONTENDED, C_DUMP_REQUEST, C_HOT_COMPILED, C_HOOK, C_HOOK_BAD, C_HOOK_NODE,
    C_REQ_CLASS, C_REQ_ALLOC, C_REQ_THREAD, C_SAMPLER_START, C_SAMPLER_RAN, C_TRACE_WORK_LINE,
    C_TRACE_CALL_LINE, C_TRACE_CALLER_MAIN, C_METHOD_CLASS_OK, C_ID_ROUNDTRIP, C_STATUS_RUNNABLE,
    C_CPU_TIME, C_ENTRY2_WORK_NULL, C_EXIT_EXPECTED, C_METHODS_OFF, C_TOUCH_ANY, C_GREF_ALLOC, C_GREF_FREE, C_WREF_ALLOC, C_WREF_FREE,
    C_HEAP0_KEEP, C_HEAP2_OK, C_HEAP2_KEEP, C_HEAP2_SUM, C_HEAP2_LINKS, C_HEAP2_ARRAY, C_HEAP2_STICKY,
    C_OBJDUMP_OK, C_MONITOR_KEPT, C_MONITOR_RAW, C_MONITOR_TRACES, C_FIB_LOAD, C_FIB_UNLOAD, C_RESET_REQUEST, C_LAST
};
static const char *names[] = {
    "init", "shutdown", "arena", "class_load_legacy", "work_entry", "work_exit", "touch_receiver",
    "touch_static_null", "node_alloc", "node_array", "node_free", "gc_start", "gc_finish",
    "gc_bad_info", "worker_start", "worker_end", "spin_tls", "wait20", "waited", "contend",
    "contended", "dump_request", "hot_compiled", "hook", "hook_bad", "hook_node",
    "req_class", "req_alloc", "req_thread", "sampler_start", "sampler_ran", "trace_work_line",
    "trace_call_line", "trace_caller_main", "method_class_ok", "id_roundtrip", "status_runnable",
    "cpu_time", "entry2_work_null", "exit_expected", "methods_off", "touch_any", "gref_alloc", "gref_free", "wref_alloc", "wref_free",
    "heap0_keep", "heap2_ok", "heap2_keep", "heap2_sum", "heap2_links", "heap2_array", "heap2_sticky",
    "objdump_ok", "monitor_kept", "monitor_raw", "monitor_traces", "fib_load", "fib_unload", "reset_request"
};
static jobjectID fib_class;

/* What a dump reader needs of each class: its interfaces and the bytes of its statics. */
#define MAX_CLASSES 16384
static struct { jobjectID id; int interfaces; int statics; } class_table[MAX_CLASSES];
static int class_table_n;
static jobjectID keep_class, keep_array;
static jobjectID keep_ids[16];
static int keep_count;
static JNIEnv *main_env, *sampler_env;

static int value_size(char c) {
    switch (c) {
    case 'Z': case 'B': return 1;
    case 'C': case 'S': return 2;
    case 'I': case 'F': return 4;
    case 'J': case 'D': return 8;
    default: return (int)sizeof(void *);
    }
}

static int is_keep(jobjectID id) {
    int i;
    for (i = 0; i < keep_count; i++)
        if (keep_ids[i] == id && id != NULL) return 1;
    return 0;
}

static const unsigned char *cur, *lim;
static int bad;
static unsigned char rd1(void) { if (cur + 1 > lim) { bad = 1; return 0; } return *cur++; }
static unsigned rd2(void) { unsigned v; if (cur + 2 > lim) { bad = 1; return 0; } v = (cur[0] << 8) | cur[1]; cur += 2; return v; }
static unsigned rd4(void) { unsigned v; if (cur + 4 > lim) { bad = 1; return 0; } v = ((unsigned)cur[0] << 24) | (cur[1] << 16) | (cur[2] << 8) | cur[3]; cur += 4; return v; }
static void *rdid(void) { void *v; if (cur + sizeof v > lim) { bad = 1; return NULL; } memcpy(&v, cur, sizeof v); cur += sizeof v; return v; }
static void skip(size_t n) { if (cur + n > lim) { bad = 1; cur = lim; } else cur += n; }

static void read_heap(const char *begin, const char *end, int level) {
    cur = (const unsigned char *)begin;
    lim = (const unsigned char *)end;
    bad = 0;
    while (cur < lim && !bad) {
        if (level == 0) {
            unsigned char ty = rd1();
            jobjectID id = rdid();
            if (ty == JVMPI_NORMAL_OBJECT && is_keep(id)) counts[C_HEAP0_KEEP]++;
            continue;
        }
        switch (rd1()) {
        case JVMPI_GC_ROOT_UNKNOWN: case JVMPI_GC_ROOT_MONITOR_USED: rdid(); break;
        case JVMPI_GC_ROOT_STICKY_CLASS: rdid(); counts[C_HEAP2_STICKY]++; break;
        case JVMPI_GC_ROOT_JNI_GLOBAL: case JVMPI_GC_ROOT_NATIVE_STACK: case JVMPI_GC_ROOT_THREAD_BLOCK:
        case JVMPI_GC_ROOT_THREAD_OBJ: rdid(); rdid(); break;
        case JVMPI_GC_ROOT_JNI_LOCAL: case JVMPI_GC_ROOT_JAVA_FRAME: rdid(); rdid(); rd4(); break;
        case JVMPI_GC_CLASS_DUMP: {
            jobjectID id = rdid();
            int i, k = -1;
            for (i = 0; i < 6; i++) rdid();
            rd4();
            for (i = 0; i < class_table_n; i++)
                if (class_table[i].id == id) { k = i; break; }
            if (k < 0) { bad = 2; break; }
            for (i = 0; i < class_table[k].interfaces; i++) rdid();
            for (i = rd2(); i > 0; i--) { unsigned char ty; rd2(); ty = rd1(); skip(ty == JVMPI_CLASS || ty == JVMPI_NORMAL_OBJECT ? sizeof(void *) : (size_t)(ty == JVMPI_LONG || ty == JVMPI_DOUBLE ? 8 : ty == JVMPI_INT || ty == JVMPI_FLOAT ? 4 : ty == JVMPI_CHAR || ty == JVMPI_SHORT ? 2 : 1)); }
            skip(class_table[k].statics);
            break;
        }
        case JVMPI_GC_INSTANCE_DUMP: {
            jobjectID id = rdid(), cls = rdid();
            unsigned n = rd4();
            if (cls == keep_class && is_keep(id) && n == 4 + sizeof(void *)) {
                unsigned v = rd4();
                jobjectID next = rdid();
                counts[C_HEAP2_KEEP]++;
                counts[C_HEAP2_SUM] += v;
                if (is_keep(next)) counts[C_HEAP2_LINKS]++;
            } else {
                skip(n);
            }
            break;
        }
        case JVMPI_GC_OBJ_ARRAY_DUMP: {
            jobjectID id = rdid();
            unsigned n = rd4(), i;
            jobjectID elem = rdid();
            for (i = 0; i < n; i++) {
                jobjectID e = rdid();
                if (elem == keep_class && is_keep(e)) { counts[C_HEAP2_ARRAY]++; keep_array = id; }
            }
            break;
        }
        case JVMPI_GC_PRIM_ARRAY_DUMP: {
            unsigned n;
            unsigned char ty;
            rdid();
            n = rd4();
            ty = rd1();
            skip((size_t)n * (ty == JVMPI_LONG || ty == JVMPI_DOUBLE ? 8 : ty == JVMPI_INT || ty == JVMPI_FLOAT ? 4 : ty == JVMPI_CHAR || ty == JVMPI_SHORT ? 2 : 1));
            break;
        }
        default:
            bad = 3;
        }
    }
    if (level == 2 && !bad && cur == lim) counts[C_HEAP2_OK] = 1;
}

static void read_object_dump(const char *data, int len) {
    cur = (const unsigned char *)data;
    lim = cur + len;
    bad = 0;
    if (rd1() == JVMPI_GC_INSTANCE_DUMP && rdid() == keep_ids[keep_count - 1] && rdid() == keep_class
        && rd4() == 4 + sizeof(void *) && rd4() == 0 && rdid() == keep_ids[keep_count - 2] && !bad && cur == lim)
        counts[C_OBJDUMP_OK] = 1;
}

static void read_monitor_dump(JVMPI_Event *e) {
    cur = (const unsigned char *)e->u.monitor_dump.begin;
    lim = (const unsigned char *)e->u.monitor_dump.end;
    bad = 0;
    while (cur < lim && !bad) {
        unsigned char type = rd1();
        const char *name = NULL;
        jobjectID object = NULL;
        JNIEnv *owner;
        unsigned n, i;
        int main_there = 0, sampler_there = 0;
        if (type == JVMPI_MONITOR_JAVA) object = rdid();
        else if (type == JVMPI_MONITOR_RAW) { name = rdid(); rdid(); }
        else { bad = 1; break; }
        owner = rdid();
        rd4();
        for (n = rd4(), i = 0; i < n; i++) rdid();
        for (n = rd4(), i = 0; i < n; i++) {
            JNIEnv *w = rdid();
            if (w == main_env) main_there = 1;
            if (w == sampler_env) sampler_there = 1;
        }
        if (object != NULL && object == keep_array && (owner == main_env || main_there)) counts[C_MONITOR_KEPT]++;
        if (name != NULL && strcmp(name, "sampler") == 0 && sampler_there) counts[C_MONITOR_RAW]++;
    }
    if (e->u.monitor_dump.num_traces >= 2 && e->u.monitor_dump.threads_status != NULL) counts[C_MONITOR_TRACES] = 1;
}

static JNIEnv *worker_env;
static jobject own_ref, own_weak;
static jobjectID own_ref_obj;
static jobjectID wait_object;
static volatile int sampler_stop;
static JVMPI_RawMonitor sampler_lock;
static int trace_done;
static int expected_work_line = -1, expected_call_line = -1;

static void count(int c) {
    jvmpi->RawMonitorEnter(lock);
    counts[c]++;
    jvmpi->RawMonitorExit(lock);
}

static int is_node(jobjectID id) {
    int i;
    for (i = 0; i < node_count; i++)
        if (node_ids[i] == id) return 1;
    return 0;
}

static int is_gate(jobjectID id) {
    int i;
    for (i = 0; i < gate_count; i++)
        if (gate_ids[i] == id) return 1;
    return 0;
}

static void sampler(void *unused) {
    (void)unused;
    count(C_SAMPLER_RAN);
    jvmpi->RawMonitorEnter(sampler_lock);
    while (!sampler_stop)
        jvmpi->RawMonitorWait(sampler_lock, 0);
    sampler_stop = 2;
    jvmpi->RawMonitorNotifyAll(sampler_lock);
    jvmpi->RawMonitorExit(sampler_lock);
}

static void write_counts(void) {
    FILE *f = fopen(out_path, "w");
    int i;
    if (!f) return;
    for (i = 0; i < C_LAST; i++)
        fprintf(f, "%s=%ld\n", names[i], counts[i]);
    fprintf(f, "work_start=%d\nwork_end=%d\n", work_start, work_end);
    fclose(f);
}

static void class_load(JVMPI_Event *e) {
    const char *name = e->u.class_load.class_name;
    int i;
    if (!(e->event_type & JVMPI_REQUESTED_EVENT) && class_table_n < MAX_CLASSES) {
        int size = 0;
        for (i = 0; i < e->u.class_load.num_static_fields; i++)
            size += value_size(e->u.class_load.statics[i].field_signature[0]);
        jvmpi->RawMonitorEnter(lock);
        class_table[class_table_n].id = e->u.class_load.class_id;
        class_table[class_table_n].interfaces = e->u.class_load.num_interfaces;
        class_table[class_table_n].statics = size;
        class_table_n++;
        jvmpi->RawMonitorExit(lock);
    }
    if (strcmp(name, "Legacy$Keep") == 0) keep_class = e->u.class_load.class_id;
    if (strcmp(name, "Fib") == 0 && !(e->event_type & JVMPI_REQUESTED_EVENT)) {
        fib_class = e->u.class_load.class_id;
        count(C_FIB_LOAD);
    }
    if (strcmp(name, "Legacy") == 0) {
        legacy_class = e->u.class_load.class_id;
        if (!(e->event_type & JVMPI_REQUESTED_EVENT)) count(C_CLASS_LOAD_LEGACY);
        for (i = 0; i < e->u.class_load.num_methods; i++) {
            JVMPI_Method *m = &e->u.class_load.methods[i];
            if (strcmp(m->method_name, "work") == 0 && strcmp(m->method_signature, "(I)I") == 0) {
                work_mid = m->method_id;
                work_start = m->start_lineno;
                work_end = m->end_lineno;
            }
            if (strcmp(m->method_name, "spin") == 0) spin_mid = m->method_id;
            if (strcmp(m->method_name, "hot") == 0) hot_mid = m->method_id;
            if (strcmp(m->method_name, "main") == 0) main_mid = m->method_id;
        }
    } else if (strcmp(name, "Legacy$Node") == 0) {
        if (e->event_type & JVMPI_REQUESTED_EVENT) {
            if (e->u.class_load.class_id == node_class && e->u.class_load.num_methods >= 2
                && e->u.class_load.num_instance_fields == 1
                && strcmp(e->u.class_load.instances[0].field_name, "value") == 0)
                count(C_REQ_CLASS);
            return;
        }
        node_class = e->u.class_load.class_id;
        for (i = 0; i < e->u.class_load.num_methods; i++)
            if (strcmp(e->u.class_load.methods[i].method_name, "touch") == 0)
                touch_mid = e->u.class_load.methods[i].method_id;
    } else if (strcmp(name, "Legacy$Gate") == 0) {
        gate_class = e->u.class_load.class_id;
    }
}

static void trace_work(JNIEnv *env) {
    JVMPI_CallFrame frames[8];
    JVMPI_CallTrace trace;
    trace.env_id = env;
    trace.frames = frames;
    jvmpi->GetCallTrace(&trace, 8);
    if (trace.num_frames >= 2 && frames[0].method_id == work_mid) {
        if (frames[0].lineno == expected_work_line) count(C_TRACE_WORK_LINE);
        if (frames[1].method_id == main_mid) count(C_TRACE_CALLER_MAIN);
        if (frames[1].lineno == expected_call_line) count(C_TRACE_CALL_LINE);
    }
    if (jvmpi->GetMethodClass(work_mid) == legacy_class) count(C_METHOD_CLASS_OK);
    if (jvmpi->GetThreadStatus(env) == JVMPI_THREAD_RUNNABLE) count(C_STATUS_RUNNABLE);
    if (jvmpi->GetCurrentThreadCpuTime() > 0) count(C_CPU_TIME);
    {
        jobjectID t = jvmpi->GetThreadObject(env);
        jobject o = jvmpi->jobjectID2jobject(t);
        if (o != NULL && jvmpi->jobject2jobjectID(o) == t) count(C_ID_ROUNDTRIP);
        /* JNI global references the agent makes itself are reported like the program's */
        own_ref_obj = t;
        own_ref = (*env)->NewGlobalRef(env, o);
        (*env)->DeleteGlobalRef(env, own_ref);
        own_weak = (*env)->NewWeakGlobalRef(env, o);
        (*env)->DeleteWeakGlobalRef(env, own_weak);
        jvmpi->RequestEvent(JVMPI_EVENT_THREAD_START, t);
    }
}

static void notify(JVMPI_Event *e) {
    int type = e->event_type & ~JVMPI_REQUESTED_EVENT;
    int requested = (e->event_type & JVMPI_REQUESTED_EVENT) != 0;
    switch (type) {
    case JVMPI_EVENT_JVM_INIT_DONE:
        count(C_INIT);
        if (jvmpi->CreateSystemThread("jvmpi-sampler", JVMPI_NORMAL_PRIORITY, sampler) == JNI_OK)
            count(C_SAMPLER_START);
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        count(C_SHUTDOWN);
        jvmpi->RawMonitorEnter(sampler_lock);
        sampler_stop = 1;
        jvmpi->RawMonitorNotifyAll(sampler_lock);
        while (sampler_stop != 2)
            jvmpi->RawMonitorWait(sampler_lock, 1000);
        jvmpi->RawMonitorExit(sampler_lock);
        write_counts();
        break;
    case JVMPI_EVENT_ARENA_NEW:
        if (e->u.new_arena.arena_name != NULL) count(C_ARENA);
        break;
    case JVMPI_EVENT_CLASS_LOAD:
        class_load(e);
        break;
    case JVMPI_EVENT_CLASS_LOAD_HOOK: {
        const unsigned char *d = e->u.class_load_hook.class_data;
        jint n = e->u.class_load_hook.class_data_len, i;
        count(C_HOOK);
        if (n < 4 || d[0] != 0xCA || d[1] != 0xFE || d[2] != 0xBA || d[3] != 0xBE) count(C_HOOK_BAD);
        for (i = 0; i + 11 <= n; i++)
            if (memcmp(d + i, "Legacy$Node", 11) == 0 && d[i + 11] == 1) { count(C_HOOK_NODE); break; }
        /* not instrumented: both fields keep their old values */
        break;
    }
    case JVMPI_EVENT_METHOD_ENTRY:
        if (e->u.method.method_id == work_mid) {
            count(C_WORK_ENTRY);
            if (!trace_done) {
                trace_done = 1;
                trace_work(e->env_id);
            }
        } else if (e->u.method.method_id == spin_mid && e->env_id == worker_env) {
            long *tls = (long *)jvmpi->GetThreadLocalStorage(e->env_id);
            if (tls) (*tls)++;
        }
        break;
    case JVMPI_EVENT_METHOD_ENTRY2:
        if (e->u.method_entry2.method_id == touch_mid) {
            count(C_TOUCH_ANY);
            if (is_node(e->u.method_entry2.obj_id)) count(C_TOUCH_RECEIVER);
            if (node_count == 1 && jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_ALLOC, e->u.method_entry2.obj_id) == JVMPI_SUCCESS
                && jvmpi->RequestEvent(JVMPI_EVENT_CLASS_LOAD, node_class) == JVMPI_SUCCESS) {
                /* counted when the requested events arrive */
            }
        } else if (e->u.method_entry2.method_id == work_mid && e->u.method_entry2.obj_id == NULL) {
            count(C_ENTRY2_WORK_NULL);
        }
        break;
    case JVMPI_EVENT_METHOD_EXIT:
        if (e->u.method.method_id == work_mid) count(C_WORK_EXIT);
        break;
    case JVMPI_EVENT_OBJECT_ALLOC:
        if (requested) {
            if (is_node(e->u.obj_alloc.obj_id) && e->u.obj_alloc.class_id == node_class) count(C_REQ_ALLOC);
            break;
        }
        if (e->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT && e->u.obj_alloc.class_id != NULL
            && e->u.obj_alloc.class_id == node_class) {
            jvmpi->RawMonitorEnter(lock);
            if (node_count < MAX_IDS) node_ids[node_count++] = e->u.obj_alloc.obj_id;
            counts[C_NODE_ALLOC]++;
            jvmpi->RawMonitorExit(lock);
        } else if (e->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT && e->u.obj_alloc.class_id == keep_class
                   && keep_class != NULL) {
            jvmpi->RawMonitorEnter(lock);
            if (keep_count < 16) keep_ids[keep_count++] = e->u.obj_alloc.obj_id;
            jvmpi->RawMonitorExit(lock);
        } else if (e->u.obj_alloc.is_array == JVMPI_CLASS && e->u.obj_alloc.class_id == node_class) {
            count(C_NODE_ARRAY);
        } else if (e->u.obj_alloc.is_array == JVMPI_NORMAL_OBJECT && e->u.obj_alloc.class_id == gate_class
                   && gate_class != NULL) {
            jvmpi->RawMonitorEnter(lock);
            if (gate_count < 64) gate_ids[gate_count++] = e->u.obj_alloc.obj_id;
            jvmpi->RawMonitorExit(lock);
        }
        break;
    case JVMPI_EVENT_OBJECT_FREE:
        if (is_node(e->u.obj_free.obj_id)) counts[C_NODE_FREE]++;
        break;
    case JVMPI_EVENT_CLASS_UNLOAD:
        if (e->u.class_unload.class_id == fib_class && fib_class != NULL) count(C_FIB_UNLOAD);
        break;
    case JVMPI_EVENT_GC_START:
        count(C_GC_START);
        break;
    case JVMPI_EVENT_GC_FINISH:
        count(C_GC_FINISH);
        if (e->u.gc_info.total_object_space <= 0 || e->u.gc_info.used_object_space <= 0
            || e->u.gc_info.used_object_space > e->u.gc_info.total_object_space)
            count(C_GC_BAD_INFO);
        break;
    case JVMPI_EVENT_THREAD_START:
        if (requested) {
            count(C_REQ_THREAD);
            break;
        }
        if (strcmp(e->u.thread_start.thread_name, "legacy-worker") == 0) {
            worker_env = e->u.thread_start.thread_env_id;
            jvmpi->SetThreadLocalStorage(worker_env, calloc(1, sizeof(long)));
            count(C_WORKER_START);
        } else if (strcmp(e->u.thread_start.thread_name, "jvmpi-sampler") == 0) {
            sampler_env = e->u.thread_start.thread_env_id;
            count(C_SAMPLER_START);
        } else if (strcmp(e->u.thread_start.thread_name, "main") == 0) {
            main_env = e->u.thread_start.thread_env_id;
        }
        break;
    case JVMPI_EVENT_THREAD_END:
        if (e->env_id == worker_env && worker_env != NULL) {
            long *tls = (long *)jvmpi->GetThreadLocalStorage(e->env_id);
            count(C_WORKER_END);
            /* Legacy's calls are counted: method events off, so that hot() gets compiled */
            if (jvmpi->DisableEvent(JVMPI_EVENT_METHOD_ENTRY, NULL) == JVMPI_SUCCESS
                && jvmpi->DisableEvent(JVMPI_EVENT_METHOD_ENTRY2, NULL) == JVMPI_SUCCESS
                && jvmpi->DisableEvent(JVMPI_EVENT_METHOD_EXIT, NULL) == JVMPI_SUCCESS)
                count(C_METHODS_OFF);
            if (tls) {
                counts[C_SPIN_TLS] = *tls;
                free(tls);
            }
        }
        break;
    case JVMPI_EVENT_MONITOR_WAIT:
        if (e->u.monitor_wait.timeout == 20) {
            wait_object = e->u.monitor_wait.object;
            count(C_WAIT20);
        }
        break;
    case JVMPI_EVENT_MONITOR_WAITED:
        if (e->u.monitor_wait.object == wait_object && wait_object != NULL) count(C_WAITED);
        break;
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTER:
        if (is_gate(e->u.monitor.object)) count(C_CONTEND);
        break;
    case JVMPI_EVENT_MONITOR_CONTENDED_ENTERED:
        if (is_gate(e->u.monitor.object)) count(C_CONTENDED);
        break;
    case JVMPI_EVENT_JNI_GLOBALREF_ALLOC:
        if (e->u.jni_globalref_alloc.obj_id == own_ref_obj && own_ref_obj != NULL) count(C_GREF_ALLOC);
        break;
    case JVMPI_EVENT_JNI_GLOBALREF_FREE:
        if (e->u.jni_globalref_free.ref_id == own_ref && own_ref != NULL) count(C_GREF_FREE);
        break;
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC:
        if (e->u.jni_globalref_alloc.obj_id == own_ref_obj && own_ref_obj != NULL) count(C_WREF_ALLOC);
        break;
    case JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE:
        if (e->u.jni_globalref_free.ref_id == own_weak && own_weak != NULL) count(C_WREF_FREE);
        break;
    case JVMPI_EVENT_DATA_DUMP_REQUEST: {
        JVMPI_HeapDumpArg level0 = { JVMPI_DUMP_LEVEL_0 };
        count(C_DUMP_REQUEST);
        jvmpi->DisableGC();
        /* the heap first: the monitor dump looks for KEPT's ID, which the heap dump gives */
        jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, &level0);
        jvmpi->RequestEvent(JVMPI_EVENT_HEAP_DUMP, NULL);
        if (keep_count >= 2) jvmpi->RequestEvent(JVMPI_EVENT_OBJECT_DUMP, keep_ids[keep_count - 1]);
        jvmpi->RequestEvent(JVMPI_EVENT_MONITOR_DUMP, NULL);
        jvmpi->EnableGC();
        /* done: wake Legacy's main, which waits on KEPT (through JNI, as agents did) */
        if (keep_array != NULL && e->env_id != NULL) {
            JNIEnv *env = e->env_id;
            jobject a = jvmpi->jobjectID2jobject(keep_array);
            jclass object = (*env)->FindClass(env, "java/lang/Object");
            jmethodID notify_all = object ? (*env)->GetMethodID(env, object, "notifyAll", "()V") : NULL;
            if (a != NULL && notify_all != NULL && (*env)->MonitorEnter(env, a) == JNI_OK) {
                (*env)->CallVoidMethod(env, a, notify_all);
                (*env)->MonitorExit(env, a);
            }
        }
        break;
    }
    case JVMPI_EVENT_DATA_RESET_REQUEST:
        count(C_RESET_REQUEST);
        break;
    case JVMPI_EVENT_HEAP_DUMP:
        if (e->event_type & JVMPI_REQUESTED_EVENT)
            read_heap(e->u.heap_dump.begin, e->u.heap_dump.end, e->u.heap_dump.dump_level);
        break;
    case JVMPI_EVENT_OBJECT_DUMP:
        read_object_dump(e->u.object_dump.data, e->u.object_dump.data_len);
        break;
    case JVMPI_EVENT_MONITOR_DUMP:
        read_monitor_dump(e);
        break;
    case JVMPI_EVENT_COMPILED_METHOD_LOAD:
        if (e->u.compiled_method_load.method_id == hot_mid && e->u.compiled_method_load.code_size > 0)
            count(C_HOT_COMPILED);
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    static const jint events[] = {
        JVMPI_EVENT_JVM_INIT_DONE, JVMPI_EVENT_JVM_SHUT_DOWN, JVMPI_EVENT_ARENA_NEW,
        JVMPI_EVENT_CLASS_LOAD, JVMPI_EVENT_CLASS_LOAD_HOOK, JVMPI_EVENT_METHOD_ENTRY,
        JVMPI_EVENT_METHOD_ENTRY2, JVMPI_EVENT_METHOD_EXIT, JVMPI_EVENT_OBJECT_ALLOC,
        JVMPI_EVENT_OBJECT_FREE, JVMPI_EVENT_GC_START, JVMPI_EVENT_GC_FINISH,
        JVMPI_EVENT_THREAD_START, JVMPI_EVENT_THREAD_END, JVMPI_EVENT_MONITOR_WAIT,
        JVMPI_EVENT_MONITOR_WAITED, JVMPI_EVENT_MONITOR_CONTENDED_ENTER,
        JVMPI_EVENT_MONITOR_CONTENDED_ENTERED, JVMPI_EVENT_DATA_DUMP_REQUEST,
        JVMPI_EVENT_COMPILED_METHOD_LOAD, JVMPI_EVENT_JNI_GLOBALREF_ALLOC, JVMPI_EVENT_JNI_GLOBALREF_FREE,
        JVMPI_EVENT_JNI_WEAK_GLOBALREF_ALLOC, JVMPI_EVENT_JNI_WEAK_GLOBALREF_FREE, JVMPI_EVENT_CLASS_UNLOAD,
        JVMPI_EVENT_DATA_RESET_REQUEST,
    };
    size_t i;
    FILE *src;
    char line[512];
    int n = 0;
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1_1) != JNI_OK) return JNI_ERR;
    if (options == NULL || strncmp(options, "out=", 4) != 0) return JNI_ERR;
    /* options: out=PATH,src=PATH (the commas come through untouched) */
    {
        const char *comma = strchr(options, ',');
        size_t len = comma ? (size_t)(comma - options - 4) : strlen(options + 4);
        if (len >= sizeof out_path) return JNI_ERR;
        memcpy(out_path, options + 4, len);
        out_path[len] = 0;
        if (comma && strncmp(comma + 1, "src=", 4) == 0 && (src = fopen(comma + 5, "r")) != NULL) {
            while (fgets(line, sizeof line, src)) {
                n++;
                if (strstr(line, "// LINE:work")) expected_work_line = n;
                if (strstr(line, "// LINE:call")) expected_call_line = n;
            }
            fclose(src);
        }
    }
    jvmpi->NotifyEvent = notify;
    lock = jvmpi->RawMonitorCreate("_counter lock");
    sampler_lock = jvmpi->RawMonitorCreate("sampler");
    for (i = 0; i < sizeof events / sizeof events[0]; i++)
        if (jvmpi->EnableEvent(events[i], NULL) != JVMPI_SUCCESS) {
            fprintf(stderr, "counter: EnableEvent(%d) failed\n", (int)events[i]);
            return JNI_ERR;
        }
    if (jvmpi->EnableEvent(JVMPI_EVENT_HEAP_DUMP, NULL) != JVMPI_NOT_AVAILABLE) return JNI_ERR;
    counts[C_EXIT_EXPECTED] = 1;
    return JNI_OK;
}
