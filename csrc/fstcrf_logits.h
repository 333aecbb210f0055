/*
 * fstcrf_logits.h -- any model's logits decoded in one call: each token's label
 * log-probabilities (the log-softmax of its logits), lifted to the states of a
 * label topology, and each sentence's best path through them:
 *
 *     rows [N, L] -> fd_label_log_probs -> emit [N, S] -> fc_viterbi -> path [N], score [B]
 *
 * fd_decode runs both, so that a call on one sentence costs their own work and
 * one crossing from Python; the results are those of the two run one by one, bit
 * for bit, whatever the sentences of the batch.  Conventions are those of
 * fstcrf_kernel.h.
 */
#ifndef FSTCRF_LOGITS_H
#define FSTCRF_LOGITS_H

#include <stdint.h>

#include "fstcrf_kernel.h"

#define FD_NOT_FINITE 21  /* a logit is NaN or infinite */

/* Each token's label log-probabilities, lifted to the states.
 *   rows        [N, L]  logits
 *   state_label [S]     the label of each state, in [0, L)
 *   emit        [N, S]  OVERWRITTEN: emit[n, s] = (rows[n, l] - m_n) - log(sum_k exp(rows[n, k] - m_n))
 *                       with l = state_label[s] and m_n the row's largest logit
 * Returns FD_NOT_FINITE, emit then undefined, if a logit is NaN or infinite, else FC_OK. */
int fd_label_log_probs(int64_t num_tokens, int32_t num_labels, const double *rows, int32_t num_states,
                       const int32_t *state_label, double *emit);

/* fd_label_log_probs, then fc_viterbi over the sentences cut at offsets [B+1] (from
 * 0 to N) under the scores sc: path [N] and score [B] as fc_viterbi writes them.
 * Returns FD_NOT_FINITE as fd_label_log_probs does, else fc_viterbi's status. */
int fd_decode(const fc_graph *g, const fc_scores *sc, int64_t num_tokens, int32_t num_labels, const double *rows,
              const int32_t *state_label, int32_t num_sequences, const int64_t *offsets, double *emit,
              int32_t *path, double *score, fc_workspace *ws);

#endif
