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
    C_CPU_TIME, C_ENTRY2_WORK_NULL, C_EXIT_EXPECTED, C_METHODS_OFF, C_TOUCH_ANY, C_LAST
};
static const char *names[] = {
    "init", "shutdown", "arena", "class_load_legacy", "work_entry", "work_exit", "touch_receiver",
    "touch_static_null", "node_alloc", "node_array", "node_free", "gc_start", "gc_finish",
    "gc_bad_info", "worker_start", "worker_end", "spin_tls", "wait20", "waited", "contend",
    "contended", "dump_request", "hot_compiled", "hook", "hook_bad", "hook_node",
    "req_class", "req_alloc", "req_thread", "sampler_start", "sampler_ran", "trace_work_line",
    "trace_call_line", "trace_caller_main", "method_class_ok", "id_roundtrip", "status_runnable",
    "cpu_time", "entry2_work_null", "exit_expected", "methods_off", "touch_any"
};

static JNIEnv *worker_env;
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
            count(C_SAMPLER_START);
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
    case JVMPI_EVENT_DATA_DUMP_REQUEST:
        count(C_DUMP_REQUEST);
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
        JVMPI_EVENT_COMPILED_METHOD_LOAD,
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
