/*
 * fstcrf_train.h -- the conditional log-likelihood gradient of a block of
 * sentences, in one call.
 *
 * For each group of consecutive sentences (at most group_tokens tokens, or
 * one longer sentence) it runs
 *
 *     ff_emissions          state scores of the group   (fstcrf_features.h)
 *     fc_forward_backward   log Z, marginals, edge counts (fstcrf_kernel.h)
 *     ff_accumulate         expected feature counts     (fstcrf_features.h)
 *
 * so the group's scores and marginals stay in cache between the three steps
 * and no per-group work returns to the caller.  The dynamic program and the
 * feature loops are the public functions of those headers; this file only
 * sequences them.
 *
 * Decoding topology.  The dynamic program runs on a graph of S' states which
 * is either the model's own (state_map NULL, S' = S) or a restriction of it
 * (a grammar intersected with the topology): state s' of the graph stands for
 * model state state_map[s'].  Emission columns are gathered through the map
 * and marginals summed back, so features always see the model's S states.
 *
 * Partial labels.  A sentence flagged in `partial` contributes
 *     log Z - log Z(paths whose state at token n is allowed by allowed[n, .])
 * and the matching difference of expected counts; a second forward-backward
 * over the group's partial sentences with the states of disallowed labels
 * scored -inf gives the clamped terms.
 *
 * Conventions are those of fstcrf_kernel.h and fstcrf_features.h: shapes in
 * brackets, no globals, no allocation, all buffers owned by the caller, so
 * calls with their own workspaces and outputs may run in parallel threads.
 */
#ifndef FSTCRF_TRAIN_H
#define FSTCRF_TRAIN_H

#include <stdint.h>

#include "fstcrf_features.h"
#include "fstcrf_kernel.h"

/* The sentences of a block: the rows of the block's ff_tokens cut into B. */
typedef struct {
    int32_t num_sequences;   /* B */
    const int64_t *offsets;  /* [B+1] token offsets within the block, offsets[0] = 0 */
    const uint8_t *partial;  /* [B] 1 where the sentence is partially labelled, or NULL for none */
    int32_t num_labels;      /* L */
    const int32_t *state_label; /* [S] label of each model state, in [0, L) */
    const uint8_t *allowed;  /* [n, L] 1 where label c may be taken at token t of the block;
                                read for partial sentences only (unused if partial is NULL) */
    const int32_t *token_class; /* [n] class of each token, selecting its row of the
                                   transition scores (see fc_batch), or NULL: class 0 */
} ft_sentences;

/* Caller-owned scratch space, sized by ft_workspace_doubles / _ints for the
 * group size and the longest sentence of the block. */
typedef struct {
    int64_t group_tokens;    /* tokens per group (a longer sentence forms a group alone) */
    int64_t t_max;           /* longest sentence of the block */
    double *doubles;         /* [ft_workspace_doubles(d, g, C, group_tokens, t_max)] */
    int32_t *ints;           /* [ft_workspace_ints(g, group_tokens, t_max)] */
    int64_t *int64s;         /* [ft_workspace_int64s(group_tokens, t_max)] */
} ft_workspace;

int64_t ft_workspace_doubles(const ff_dictionary *d, const fc_graph *g, int32_t C,
                             int64_t group_tokens, int64_t t_max);
int64_t ft_workspace_ints(const fc_graph *g, int64_t group_tokens, int64_t t_max);
int64_t ft_workspace_int64s(int64_t group_tokens, int64_t t_max);

/* Add the negative log-likelihood terms of a block that depend on Z.
 *   d, x          feature dictionary and the block's n token rows
 *   s             the block's B sentences
 *   g, sc         the decoding graph (S' states, E' edges) and its transition
 *                 scores [C, E'], start and final scores (already multiplied by
 *                 theta_scale)
 *   state_map     [S'] model state of each graph state, or NULL when S' = S
 *                 and graph state s is model state s
 *   theta         [F] feature weights; emissions use theta_scale * theta
 *   loss          ADDED TO: sum over sentences of log Z, minus the clamped
 *                 log Z of partial sentences
 *   grad          [F] ADDED TO: grad_scale * expected feature counts (free
 *                 minus clamped for partial sentences)
 *   grad_at       [P] NULL, or the compact layout of grad (ff_accumulate_at):
 *                 predicate p's counts start at grad[grad_at[p]], or, where
 *                 grad_at[p] is FF_DIRECT, at grad_direct[ptr[p]]
 *   grad_direct   [F] ADDED TO likewise at the FF_DIRECT predicates (NULL if none)
 *   edge_counts   [C, E'] ADDED TO: grad_scale * expected counts of edge e into
 *                 a token of class c (likewise)
 * Returns FC_OK; FC_INFEASIBLE if a sentence (or a partial sentence's
 * clamped lattice) has no path, its terms then being left out; or
 * FC_BAD_ARGUMENT before writing any output. */
int ft_gradient(const ff_dictionary *d, const ff_tokens *x, const ft_sentences *s,
                const fc_graph *g, const fc_scores *sc, const int32_t *state_map,
                const double *theta, double theta_scale, double grad_scale,
                double *loss, double *grad, const int64_t *grad_at, double *grad_direct,
                double *edge_counts, ft_workspace *ws);

/* Tagging's counterpart: the best state paths of a block of sentences from their
 * predicate rows, ff_emissions then fc_viterbi on the model's graph, in one call.
 *   d, x, theta   feature dictionary, the block's n token rows, weights [F]
 *   g, sc         the model's graph (S states) and its scores
 *   offsets       [b+1] the block's sentences, from 0 to n
 *   token_class   [n] the class of each token (see fc_batch), or NULL
 *   emit          [n, S] OVERWRITTEN: the state scores
 *   work          [ff_work_doubles(d)] scratch
 *   ws            fc_viterbi's workspace
 *   path          [n] OVERWRITTEN: the best state at each token
 *   score         [b] OVERWRITTEN: the best path's score
 * Returns ff_emissions' or fc_viterbi's status. */
int ft_best_paths(const ff_dictionary *d, const ff_tokens *x, const double *theta, const fc_graph *g,
                  const fc_scores *sc, int32_t num_sequences, const int64_t *offsets,
                  const int32_t *token_class, double *emit, double *work, fc_workspace *ws,
                  int32_t *path, double *score);

#endif
