/* The floor of a JNI-trampoline tracer (an anchor of bench/README.md): FloorBench's static natives read
 * the TSC and store one 32-byte record (ticks, key, kind) into a thread-local ring of 64 Ki
 * records. No writer, no checks: what is left when everything but the clock and the store is
 * taken away.
 *
 * The ring is exported, not static: nothing in this file reads it, and gcc -O2 deleted the
 * stores into a static ring (and left the TSC read unused), so until 2026-11-22 (bench run 19)
 * the floor measured a JNI call, a thread-local counter and a TSC read, without the store it
 * claims. One thread-local block holds the index and the records: one TLS lookup per call. */
#include <jni.h>
#include <stdint.h>
#include <x86intrin.h>

struct record {
    uint64_t ticks;
    uint64_t key;
    uint32_t arg, extra, kind, pad;
};

#define RING 65536

struct ring {
    unsigned next;
    struct record records[RING];
};

__thread struct ring floor_ring;

static inline void put(uint32_t kind, jint key) {
    struct ring *t = &floor_ring;
    struct record *r = &t->records[t->next++ & (RING - 1)];
    r->ticks = __rdtsc();
    r->key = (uint64_t)key;
    r->kind = kind;
}

JNIEXPORT void JNICALL Java_FloorBench_enter(JNIEnv *env, jclass cls, jint key) { put(1, key); }
JNIEXPORT void JNICALL Java_FloorBench_exit(JNIEnv *env, jclass cls, jint key) { put(2, key); }

/* The same two functions for FloorBench25's FFM critical downcalls (JDK 22 and later): no
 * JNIEnv, no class, no transition. */
void floor_enter(int32_t key) { put(1, key); }
void floor_exit(int32_t key) { put(2, key); }
