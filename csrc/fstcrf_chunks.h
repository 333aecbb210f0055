/*
 * fstcrf_chunks.h -- a batch's entity (chunk) probabilities, and the candidate
 * chunks of F1-optimal decoding, each in one call: the linear scores, the scaled
 * forward and backward tables, the chunk marginals and the span passes of
 * fstcrf.engine.spans and fstcrf.engine.mbr (fstcrf_marginals.c has the passes); and
 * whether the lattice holds a path, which MBR decoding asks of the labels it writes.
 * Every value of a sentence is computed from that sentence alone, so a sentence
 * gets the same results bit for bit in any batch.  Conventions are those of
 * fstcrf_kernel.h; sc and b hold the log-domain scores (b->emit [N, S] emissions).
 */
#ifndef FSTCRF_CHUNKS_H
#define FSTCRF_CHUNKS_H

#include <stdint.h>

#include "fstcrf_kernel.h"

/* The bits of fc_chunk_reading.state_prefix: what a state's label prefix lets a chunk do. */
#define FC_CHUNK_RUNS_IN 1   /* I- or E-: a chunk can run into the token */
#define FC_CHUNK_RUNS_ON 2   /* B- or I-: a chunk can run on from the token */
#define FC_CHUNK_BEGINS 4    /* B- or S-: a chunk begins at the token */
#define FC_CHUNK_ENDS 8      /* E- or S-: a chunk ends at the token */

/* The states and edges of a topology read as chunks. */
typedef struct {
    int32_t num_types;            /* K >= 0 */
    const int32_t *state_type;    /* [S] chunk type of each state, in [0, K), or -1 for O */
    const int32_t *state_prefix;  /* [S] FC_CHUNK_* bits of each state's label */
    const uint8_t *continuing;    /* [E] 1 where edge e continues its source's chunk */
} fc_chunk_reading;

/* Doubles of the work array of fc_chunk_probabilities and fc_chunk_candidates for
 * these scores and batch, and K chunk types. */
int64_t fc_chunk_work_doubles(const fc_graph *g, const fc_scores *sc, const fc_batch *b, int32_t num_types);

/* probability [M]: the probability that span m -- tokens span_first[m] ..
 * span_last[m] (within sentence span_sentence[m]) as a chunk of type span_type[m]
 * -- is a chunk of the output, each at most 1; exact [B]: 1 for a sentence whose
 * scaled tables kept a mass of at least 1e-100 in every row before rescaling and
 * at its end (exact to rounding), else 0: the spans of such a sentence get 0, for
 * the caller to redo in the log domain (a small temperature).  work: fc_chunk_work_doubles doubles.  Returns FC_BAD_ARGUMENT, before
 * writing, for a span outside its sentence or of a type outside [0, K), a state
 * type outside [-1, K), offsets that do not rise from 0, else FC_OK. */
int fc_chunk_probabilities(const fc_graph *g, const fc_scores *sc, const fc_batch *b, const fc_chunk_reading *r,
                           int64_t num_spans, const int32_t *span_sentence, const int64_t *span_first,
                           const int64_t *span_last, const int32_t *span_type, double *probability,
                           int32_t *exact, double *work);

/* The chunks of each sentence's state path path [N] (a Viterbi path, say) and their
 * probabilities: a chunk begins at a state of a type (state_type >= 0) that does not
 * continue the state before it (FC_CHUNK_RUNS_ON there, FC_CHUNK_RUNS_IN here, the same
 * type) and runs while the next state continues it, the rule of
 * fstcrf.engine.chunks.chunks_of_parts.  The count [1] chunks, at most N, ordered by
 * sentence and first token, in chunk_sentence, chunk_first, chunk_last (within the
 * sentence) and chunk_type (room for N each), and probability [N] as
 * fc_chunk_probabilities gives them, bit for bit, with exact [B] (an inexact
 * sentence's chunks get 0).  work: fc_chunk_work_doubles doubles.  Returns
 * FC_BAD_ARGUMENT, before writing, for a state of path outside [0, S) and as
 * fc_chunk_probabilities does, else FC_OK. */
int fc_path_chunks(const fc_graph *g, const fc_scores *sc, const fc_batch *b, const fc_chunk_reading *r,
                   const int32_t *path, int32_t *chunk_sentence, int64_t *chunk_first, int64_t *chunk_last,
                   int32_t *chunk_type, double *probability, int64_t *count, int32_t *exact, double *work);

/* The candidate chunks of each exact sentence (fstcrf.engine.mbr.candidates): every
 * span whose beginning, every continuation and end the token marginals bound at
 * floor or above, and whose probability is above floor, ordered by sentence, first
 * token, last token and type: the first min(count, capacity) of them in
 * cand_sentence, cand_first, cand_last (within the sentence), cand_type and
 * cand_probability [capacity]; count [1] is how many there are (call again with a
 * capacity of at least count when it is larger).  expected_chunks [B]: each exact
 * sentence's expected number of chunks.  exact [B] and the errors as for
 * fc_chunk_probabilities; an inexact sentence has no candidates here. */
int fc_chunk_candidates(const fc_graph *g, const fc_scores *sc, const fc_batch *b, const fc_chunk_reading *r,
                        double floor, int64_t capacity, int32_t *cand_sentence, int64_t *cand_first,
                        int64_t *cand_last, int32_t *cand_type, double *cand_probability, int64_t *count,
                        int32_t *exact, double *expected_chunks, double *work);

/* finite [B]: 1 where sentence i's state path path [N] has a finite score under sc
 * and b (states in [0, S), a finite start, end and emission at each token, and an
 * edge of finite score into each later token), else 0: whether the lattice holds the
 * path of the F1-optimal labels (fstcrf.engine.mbr.labelled_paths; -1 for a label no
 * state has).  Returns FC_BAD_ARGUMENT, before writing, for offsets that do not rise
 * from 0, else FC_OK. */
int fc_finite_paths(const fc_graph *g, const fc_scores *sc, const fc_batch *b, const int32_t *path, int32_t *finite);

#endif
