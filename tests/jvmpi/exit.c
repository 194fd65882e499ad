/*
 * A JVMPI agent for tests/jvmpi.rs that drives threads and ends the JVM: from a system thread
 * it suspends the main thread (running examples/Endless), takes its call trace, resumes it,
 * checks ThreadHasRun and the list calls, prints what it saw on stderr, then ProfilerExit(7).
 */
#include <stdio.h>
#include <unistd.h>
#include <jni.h>
#include "jvmpi.h"

static JVMPI_Interface *jvmpi;
static JNIEnv *main_env;

static void driver(void *unused) {
    JVMPI_CallFrame frames[16];
    JVMPI_CallTrace trace;
    jint results[1] = { -5 };
    int frames_seen, has_run, status;
    (void)unused;
    usleep(200 * 1000);
    jvmpi->SuspendThread(main_env);
    status = jvmpi->GetThreadStatus(main_env);
    trace.env_id = main_env;
    trace.frames = frames;
    jvmpi->GetCallTrace(&trace, 16);
    frames_seen = trace.num_frames;
    jvmpi->ResumeThread(main_env);
    usleep(100 * 1000);
    jvmpi->SuspendThread(main_env);
    has_run = jvmpi->ThreadHasRun(main_env);
    jvmpi->ResumeThread(main_env);
    jvmpi->SuspendThreadList(1, &main_env, results);
    jvmpi->ResumeThreadList(1, &main_env, results + 0);
    fprintf(stderr, "exit-agent: frames=%d status=%d has_run=%d list=%d\n", frames_seen, status,
            has_run, (int)results[0]);
    fflush(stderr);
    jvmpi->ProfilerExit(7);
}

static void notify(JVMPI_Event *e) {
    switch (e->event_type) {
    case JVMPI_EVENT_JVM_INIT_DONE:
        main_env = e->env_id;
        jvmpi->CreateSystemThread("exit-driver", JVMPI_NORMAL_PRIORITY, driver);
        break;
    case JVMPI_EVENT_JVM_SHUT_DOWN:
        fprintf(stderr, "exit-agent: shutdown\n");
        fflush(stderr);
        break;
    }
}

JNIEXPORT jint JNICALL JVM_OnLoad(JavaVM *vm, char *options, void *reserved) {
    (void)options;
    (void)reserved;
    if ((*vm)->GetEnv(vm, (void **)&jvmpi, JVMPI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    jvmpi->NotifyEvent = notify;
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_INIT_DONE, NULL);
    jvmpi->EnableEvent(JVMPI_EVENT_JVM_SHUT_DOWN, NULL);
    return JNI_OK;
}
