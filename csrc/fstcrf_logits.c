/*
 * fstcrf_logits.c -- logits decoded in one call (see the header).
 */
#include <math.h>
#include <stddef.h>

#include "fstcrf_logits.h"

int fd_label_log_probs(int64_t num_tokens, int32_t num_labels, const double *rows, int32_t num_states,
                       const int32_t *state_label, double *emit)
{
    for (int64_t n = 0; n < num_tokens; ++n) {
        const double *row = rows + n * num_labels;
        double largest = row[0];
        for (int32_t l = 0; l < num_labels; ++l) {
            if (!isfinite(row[l])) return FD_NOT_FINITE;
            if (row[l] > largest) largest = row[l];
        }
        double total = 0.0;
        for (int32_t l = 0; l < num_labels; ++l)
            total += exp(row[l] - largest);
        const double log_total = log(total);
        double *out = emit + n * num_states;
        for (int32_t s = 0; s < num_states; ++s)
            out[s] = (row[state_label[s]] - largest) - log_total;
    }
    return FC_OK;
}

int fd_decode(const fc_graph *g, const fc_scores *sc, int64_t num_tokens, int32_t num_labels, const double *rows,
              const int32_t *state_label, int32_t num_sequences, const int64_t *offsets, double *emit,
              int32_t *path, double *score, fc_workspace *ws)
{
    if (num_sequences < 1 || offsets[0] != 0 || offsets[num_sequences] != num_tokens)
        return FC_BAD_ARGUMENT;
    const int status = fd_label_log_probs(num_tokens, num_labels, rows, g->num_states, state_label, emit);
    if (status != FC_OK) return status;
    const fc_batch batch = {num_sequences, offsets, emit, NULL};
    return fc_viterbi(g, sc, &batch, path, score, ws);
}
