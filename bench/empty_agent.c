/* The anchor "JVMTI MethodEntry/Exit with empty callbacks": the floor any JVMTI-event
 * tracer pays before it records anything. Written for jlive's benchmark; built by run.sh. */
#include <jvmti.h>
#include <string.h>

static void JNICALL on_entry(jvmtiEnv *jvmti, JNIEnv *jni, jthread t, jmethodID m) {}
static void JNICALL on_exit(jvmtiEnv *jvmti, JNIEnv *jni, jthread t, jmethodID m, jboolean e, jvalue v) {}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved) {
    jvmtiEnv *jvmti;
    if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_generate_method_entry_events = 1;
    caps.can_generate_method_exit_events = 1;
    if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) return JNI_ERR;
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.MethodEntry = on_entry;
    cb.MethodExit = on_exit;
    (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_METHOD_ENTRY, NULL);
    (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, JVMTI_EVENT_METHOD_EXIT, NULL);
    return JNI_OK;
}
