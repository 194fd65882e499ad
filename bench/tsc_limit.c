/* The physical limit of a traced call on this machine (issue 30): what capture=bci's records
 * cost with no JVM around them. Each iteration makes CallBench's three calls, and each call
 * reads the TSC twice (entry, exit) and stores two 16-byte records (ticks, key) in a
 * thread-local ring, as jlive's natives do; no JNI transition, no gate, no buffer hand-over.
 * Prints ns_per_iteration=N, as CallBench does.
 *
 *   gcc -O2 -o tsc_limit bench/tsc_limit.c && ./tsc_limit 100000000
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t ticks(void) { return __rdtsc(); }
#else
static inline uint64_t ticks(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif

struct slot {
    uint64_t ticks;
    uint64_t key;
};

#define RING 4096 /* 64 KiB, jlive's default buffer */
static __thread struct slot ring[RING];
static __thread unsigned next;

static inline void record(uint64_t key) {
    struct slot *s = &ring[next++ & (RING - 1)];
    s->ticks = ticks();
    s->key = key;
    /* The stores must happen: nothing reads the ring, so tell the compiler memory is used. */
    __asm__ volatile("" : : "r"(s) : "memory");
}

static inline void call(uint64_t key) {
    record(key << 1);       /* entry */
    record(key << 1 | 1);   /* exit */
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 30000000;
    if (n <= 0) {
        fprintf(stderr, "usage: tsc_limit ITERATIONS\n");
        return 2;
    }
    for (long i = 0; i < n / 10; i++) { /* warm-up */
        call(1);
        call(2);
        call(3);
    }
    double start = now();
    for (long i = 0; i < n; i++) {
        call(1); /* loop */
        call(2); /* mid */
        call(3); /* leaf */
    }
    double elapsed = now() - start;
    uint64_t sum = 0;
    for (int i = 0; i < RING; i++)
        sum += ring[i].key;
    printf("ns_per_iteration=%.2f\n", elapsed / (double)n);
    return sum == 42 ? 1 : 0; /* keeps the ring alive */
}
