/* The floor of a JNI-trampoline tracer (DESIGN.md's anchor): FloorBench's static natives read
 * the TSC and store one 32-byte record (ticks, key, kind) into a thread-local ring of 64 Ki
 * records. No writer, no checks: what is left when everything but the clock and the store is
 * taken away. */
#include <jni.h>
#include <stdint.h>
#include <x86intrin.h>

struct record {
    uint64_t ticks;
    uint64_t key;
    uint32_t arg, extra, kind, pad;
};

#define RING 65536
static __thread struct record ring[RING];
static __thread unsigned next;

static inline void put(uint32_t kind, jint key) {
    struct record *r = &ring[next++ & (RING - 1)];
    r->ticks = __rdtsc();
    r->key = (uint64_t)key;
    r->kind = kind;
}

JNIEXPORT void JNICALL Java_FloorBench_enter(JNIEnv *env, jclass cls, jint key) { put(1, key); }
JNIEXPORT void JNICALL Java_FloorBench_exit(JNIEnv *env, jclass cls, jint key) { put(2, key); }
