/*
 * fstcrf_hashing_private.h -- what the C sources share of fstcrf_hashing.c beyond its
 * public header (never given to cffi's cdef): the string hash of fh_string_hashes
 * over text given in pieces, and the hash of the boundary values "__BOS-k__" and
 * "__EOS+k__".
 */
#ifndef FSTCRF_HASHING_PRIVATE_H
#define FSTCRF_HASHING_PRIVATE_H

#include <stdint.h>

/* The hash of a text whose length is known before its bytes, given in pieces:
 * fh_stream_begin, then fh_stream_bytes for each piece in order, then fh_stream_end
 * give what fh_string_hashes gives the whole text. */
typedef struct {
    uint64_t hash;
    uint8_t pending[8];     /* the bytes of the 8-byte word being filled */
    int32_t filled;         /* how many of them */
} fh_stream;

void fh_stream_begin(fh_stream *stream, int64_t length, uint64_t salt);
void fh_stream_bytes(fh_stream *stream, const uint8_t *bytes, int64_t count);
uint64_t fh_stream_end(fh_stream *stream);

/* The hash of the boundary value "__BOS-step__" (before != 0) or "__EOS+step__", step > 0. */
uint64_t fh_boundary_hash(int before, int64_t step, uint64_t salt);

#endif
