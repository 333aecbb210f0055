/*
 * fstcrf_mbr.h -- choosing the F1-optimal chunks among a batch's candidates
 * (fstcrf.engine.mbr): in each sentence the non-overlapping candidates that maximise
 * sum (p - threshold), by weighted interval scheduling, and over the batch
 * Dinkelbach's search for the threshold that maximises the expected F1
 *     F = 2 sum p / (count + E[#chunks]).
 * The candidates are fc_chunk_candidates' (fstcrf_chunks.h).  Sums run in candidate
 * order, so a sentence's choice at a threshold is the same bit for bit in any batch.
 */
#ifndef FSTCRF_MBR_H
#define FSTCRF_MBR_H

#include <stdint.h>

/* A batch's candidate chunks, M of them over B sentences and K chunk types. */
typedef struct {
    int32_t num_sentences;       /* B >= 0 */
    const int64_t *lengths;      /* [B] tokens of each sentence */
    const int64_t *starts;       /* [B+1] sentence b's candidates are starts[b] .. starts[b+1]-1 (starts[0] = 0) */
    const int64_t *first;        /* [M] first token, within the sentence */
    const int64_t *last;         /* [M] last token (inclusive); within a sentence the candidates
                                    are in ascending (first, last) order */
    const int32_t *type;         /* [M] chunk type in [0, K) */
    const double *probability;   /* [M] */
    int32_t num_types;           /* K >= 0 */
    const uint8_t *adjacent;     /* [K] 1 where a chunk may directly follow one of its own type */
} fc_mbr_candidates;

/* Sizes of the work arrays of fc_mbr_best and fc_mbr_search: doubles and int64s
 * (for the longest sentence's dynamic program); 0 for arguments out of range. */
int64_t fc_mbr_work_doubles(const fc_mbr_candidates *c);
int64_t fc_mbr_work_links(const fc_mbr_candidates *c);

/* chosen [M]: 1 for the candidates each sentence keeps at threshold: those more
 * probable than it where no two of them overlap or touch (a chunk right after one
 * of its type, which adjacent forbids), else the non-overlapping set of them that
 * maximises sum (p - threshold), the first best in candidate order.  Returns
 * FC_BAD_ARGUMENT, before writing, for starts, spans, types or an order out of
 * range, else FC_OK. */
int fc_mbr_best(const fc_mbr_candidates *c, double threshold, uint8_t *chosen, double *work, int64_t *links);

/* Dinkelbach's search: from the candidates more probable than 1/2, at F their
 * expected F1, the threshold t = max(F / 2, floor) and the sets fc_mbr_best keeps
 * at it, while a set's F rises by more than 1e-12 and at most max_rounds times.
 * chosen [M]: the best set; threshold [1]: its threshold; proposal [M]: scratch.
 * Errors as fc_mbr_best's. */
int fc_mbr_search(const fc_mbr_candidates *c, double expected_chunks, double floor, int32_t max_rounds,
                  uint8_t *chosen, double *threshold, uint8_t *proposal, double *work, int64_t *links);

#endif
