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
 *   FC_SIMD_MAX(var)      the same for a maximum into var
 *
 * The SIMD pragmas are given only to a compiler that honours them without
 * OpenMP threads: gcc and clang with -fopenmp-simd, which the build says by
 * defining FC_OPENMP_SIMD (csrc/build_kernel.py), or any compiler of OpenMP
 * 4.0 or later with OpenMP on.  Elsewhere (MSVC, a plain -Wall build) the
 * loops are ordinary loops and the pragmas are not there to warn.
 */
#ifndef FSTCRF_PORTABLE_H
#define FSTCRF_PORTABLE_H

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

#if defined(FC_OPENMP_SIMD) || (defined(_OPENMP) && _OPENMP >= 201307)
#define FC_PRAGMA(text) _Pragma(#text)
#define FC_SIMD FC_PRAGMA(omp simd)
#define FC_SIMD_REDUCTION(op, var) FC_PRAGMA(omp simd reduction(op:var))
#ifdef __clang__
/* clang vectorises no floating-point maximum unless told that no value is NaN
 * or a signed zero (-ffast-math), so it leaves the loop as it is and warns
 * that the pragma failed (-Wpass-failed); the hint is gcc's. */
#define FC_SIMD_MAX(var)
#else
#define FC_SIMD_MAX(var) FC_PRAGMA(omp simd reduction(max:var))
#endif
#else
#define FC_SIMD
#define FC_SIMD_REDUCTION(op, var)
#define FC_SIMD_MAX(var)
#endif

#endif
