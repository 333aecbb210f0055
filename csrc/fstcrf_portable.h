/*
 * fstcrf_portable.h -- what the kernel sources ask of a compiler beyond C11;
 * private to them and not read by cffi.
 *
 * The kernel is C11 with no POSIX call, no GNU extension and nothing MSVC
 * lacks (variable-length arrays, statement expressions, zero-length arrays,
 * ssize_t).  gcc and clang, also as mingw-w64, compile every source without
 * a warning under -std=c11 -Wall -Wextra -Wpedantic -Wvla -Werror, with and
 * without the build's -fopenmp-simd -DFC_OPENMP_SIMD (.ci/compile-c).  The
 * rest goes through these macros:
 *
 *   FC_RESTRICT           the C99 restrict qualifier, which MSVC spells
 *                         __restrict
 *   FC_PREFETCH(address)  ask for the cache line of address ahead of its
 *                         use: a hint, with no effect on results
 *   FC_PREFETCH_L2(address)
 *                         the same into the second-level cache, not the
 *                         first: for a line used long after, which should not
 *                         push out the lines the work in between uses
 *   FC_SIMD               "#pragma omp simd" before a loop: its iterations
 *                         may run in vector lanes
 *   FC_SIMD_REDUCTION(op, var)
 *                         the same for a loop that reduces into var with op
 *                         (+ or |): lanes keep partial results, added at the
 *                         end, so a sum's rounding depends on this macro
 *   fc_pair               two doubles side by side, in one vector register
 *                         where the target has one (SSE2 on x86, NEON on
 *                         64-bit ARM; a plain struct elsewhere), with
 *                         fc_pair_zero(), fc_pair_set(x) (x in both),
 *                         fc_pair_load(p) and fc_pair_store(p, v) (p
 *                         unaligned), fc_pair_add(a, b), fc_pair_mul(a, b)
 *                         and fc_pair_max(a, b) (lane by lane a > b ? a : b,
 *                         so b where either is NaN):
 *                         each lane rounded as the scalar operation rounds it,
 *                         never fused, so a loop written with pairs gives the
 *                         same results as the scalar loop it stands for;
 *                         FC_SCALAR_PAIRS defined asks for the plain struct
 *
 * The SIMD pragmas are given only to a compiler that honours them without
 * OpenMP threads: gcc and clang with -fopenmp-simd, which the build says by
 * defining FC_OPENMP_SIMD (csrc/build_kernel.py), or any compiler of OpenMP
 * 4.0 or later with OpenMP on.  Elsewhere (MSVC, a plain -Wall build) the
 * loops are ordinary loops and the pragmas are not there to warn.
 *
 * The bandit learner's partner thread (fstcrf_partner.c) also needs atomics, a spin
 * hint and a way to block a thread on a word until another wakes it: FC_LOAD_ACQUIRE,
 * FC_STORE_RELEASE, FC_SWAP, FC_PAUSE, fc_wait_while and fc_wake, below.
 */
#ifndef FSTCRF_PORTABLE_H
#define FSTCRF_PORTABLE_H

#include <stdint.h>

#ifdef _MSC_VER
#define FC_RESTRICT __restrict
#else
#define FC_RESTRICT restrict
#endif

#if defined(__GNUC__) || defined(__clang__)
#define FC_PREFETCH(address) __builtin_prefetch(address)
#define FC_PREFETCH_L2(address) __builtin_prefetch(address, 0, 2)
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#include <xmmintrin.h>
#define FC_PREFETCH(address) _mm_prefetch((const char *)(address), _MM_HINT_T0)
#define FC_PREFETCH_L2(address) _mm_prefetch((const char *)(address), _MM_HINT_T1)
#else
#define FC_PREFETCH(address) ((void)(address))
#define FC_PREFETCH_L2(address) ((void)(address))
#endif

/* FC_LOAD_ACQUIRE(p) and FC_STORE_RELEASE(p, v) read and write the int32_t at p
 * atomically, with acquire and release ordering; FC_SWAP(p, from, to) sets it to
 * `to` if it holds `from`, atomically, and says whether it did (the partner
 * thread's flag, fstcrf_partner.h).  FC_PAUSE() tells the core it is spinning. */
#if defined(__GNUC__) || defined(__clang__)
#define FC_LOAD_ACQUIRE(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define FC_STORE_RELEASE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define FC_SWAP(p, from, to) fc_swap((p), (from), (to))
static inline int fc_swap(int32_t *p, int32_t from, int32_t to)
{
    return __atomic_compare_exchange_n(p, &from, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
#elif defined(_MSC_VER)
#include <intrin.h>
#define FC_LOAD_ACQUIRE(p) ((int32_t)_InterlockedOr((volatile long *)(p), 0))
#define FC_STORE_RELEASE(p, v) ((void)_InterlockedExchange((volatile long *)(p), (long)(v)))
#define FC_SWAP(p, from, to) (_InterlockedCompareExchange((volatile long *)(p), (long)(to), (long)(from)) == (long)(from))
#endif
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define FC_PAUSE() __builtin_ia32_pause()
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__)
#define FC_PAUSE() __asm__ __volatile__("yield")
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
#define FC_PAUSE() _mm_pause()
#else
#define FC_PAUSE() ((void)0)
#endif

/* fc_wait_while(p, value, milliseconds) blocks the calling thread while the int32_t at p
 * holds value, until fc_wake(p) on another thread, for at most milliseconds (-1: no
 * limit); it may return early (a signal, a spurious wake-up), so the caller looks
 * again.  fc_wake(p) wakes every thread blocked at p.  The kernel compares the value as
 * it blocks, so a change made before fc_wake is never missed.  Linux: the futex system
 * call; Windows: WaitOnAddress (Windows 8 and later, in Synchronization.lib); elsewhere
 * (POSIX: macOS, the BSDs) sleeps of 50 microseconds (nanosleep) between looks.  Only
 * for a source that defines FC_THREAD_WAITS and _DEFAULT_SOURCE before any header
 * (fstcrf_partner.c): glibc and musl declare syscall() and nanosleep only with the
 * default feature set, which -std=c11 leaves out. */
#if !defined(FC_THREAD_WAITS)
#elif defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static inline void fc_wait_while(int32_t *p, int32_t value, int32_t milliseconds)
{
    struct timespec limit = {milliseconds / 1000, (long)(milliseconds % 1000) * 1000000L};
    syscall(SYS_futex, p, FUTEX_WAIT_PRIVATE, value, milliseconds < 0 ? NULL : &limit, NULL, 0);
}
static inline void fc_wake(int32_t *p)
{
    syscall(SYS_futex, p, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}
#elif defined(_WIN32)
#include <windows.h>
#ifdef _MSC_VER
#pragma comment(lib, "Synchronization.lib")
#endif
static inline void fc_wait_while(int32_t *p, int32_t value, int32_t milliseconds)
{
    WaitOnAddress((volatile VOID *)p, &value, sizeof value, milliseconds < 0 ? INFINITE : (DWORD)milliseconds);
}
static inline void fc_wake(int32_t *p)
{
    WakeByAddressAll((PVOID)p);
}
#else
#include <time.h>
static inline void fc_wait_while(int32_t *p, int32_t value, int32_t milliseconds)
{
    const struct timespec pause = {0, 50000L};
    for (int64_t waited = 0; FC_LOAD_ACQUIRE(p) == value && (milliseconds < 0 || waited < 20 * (int64_t)milliseconds);
         waited++)
        nanosleep(&pause, NULL);
}
static inline void fc_wake(int32_t *p)
{
    (void)p;
}
#endif

#if defined(FC_OPENMP_SIMD) || (defined(_OPENMP) && _OPENMP >= 201307)
#define FC_PRAGMA(text) _Pragma(#text)
#define FC_SIMD FC_PRAGMA(omp simd)
#define FC_SIMD_REDUCTION(op, var) FC_PRAGMA(omp simd reduction(op:var))
#else
#define FC_SIMD
#define FC_SIMD_REDUCTION(op, var)
#endif

#if !defined(FC_SCALAR_PAIRS) && (defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2))
#include <emmintrin.h>
typedef __m128d fc_pair;
#define fc_pair_zero() _mm_setzero_pd()
#define fc_pair_set(x) _mm_set1_pd(x)
#define fc_pair_load(p) _mm_loadu_pd(p)
#define fc_pair_store(p, v) _mm_storeu_pd((p), (v))
#define fc_pair_add(a, b) _mm_add_pd((a), (b))
#define fc_pair_mul(a, b) _mm_mul_pd((a), (b))
#define fc_pair_max(a, b) _mm_max_pd((a), (b))
#elif !defined(FC_SCALAR_PAIRS) && (defined(__aarch64__) || defined(_M_ARM64))
#include <arm_neon.h>
typedef float64x2_t fc_pair;
#define fc_pair_zero() vdupq_n_f64(0.0)
#define fc_pair_set(x) vdupq_n_f64(x)
#define fc_pair_load(p) vld1q_f64(p)
#define fc_pair_store(p, v) vst1q_f64((p), (v))
#define fc_pair_add(a, b) vaddq_f64((a), (b))
#define fc_pair_mul(a, b) vmulq_f64((a), (b))
#define fc_pair_max(a, b) vbslq_f64(vcgtq_f64((a), (b)), (a), (b))
#else
typedef struct {
    double lo, hi;
} fc_pair;
static inline fc_pair fc_pair_set(double x)
{
    fc_pair v = {x, x};
    return v;
}
static inline fc_pair fc_pair_load(const double *p)
{
    fc_pair v = {p[0], p[1]};
    return v;
}
static inline fc_pair fc_pair_add(fc_pair a, fc_pair b)
{
    fc_pair v = {a.lo + b.lo, a.hi + b.hi};
    return v;
}
static inline fc_pair fc_pair_mul(fc_pair a, fc_pair b)
{
    fc_pair v = {a.lo * b.lo, a.hi * b.hi};
    return v;
}
static inline fc_pair fc_pair_max(fc_pair a, fc_pair b)
{
    fc_pair v = {a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
    return v;
}
#define fc_pair_zero() fc_pair_set(0.0)
#define fc_pair_store(p, v) ((p)[0] = (v).lo, (p)[1] = (v).hi)
#endif

#endif
