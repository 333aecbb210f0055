/*
 * fstcrf_portable.h -- the two things GCC and Clang spell one way and MSVC
 * (the compiler of the Windows wheel) another; not part of the API and not
 * read by cffi.
 *
 *   FC_RESTRICT       C99's restrict, which MSVC's C knows as __restrict
 *   FC_PREFETCH(p)    a hint to load the cache line holding p; MSVC has no
 *                     __builtin_prefetch, and the hint is dropped there
 */
#ifndef FSTCRF_PORTABLE_H
#define FSTCRF_PORTABLE_H

#if defined(_MSC_VER) && !defined(__clang__)
#define FC_RESTRICT __restrict
#define FC_PREFETCH(address) ((void)(address))
#else
#define FC_RESTRICT restrict
#define FC_PREFETCH(address) __builtin_prefetch(address)
#endif

#endif
