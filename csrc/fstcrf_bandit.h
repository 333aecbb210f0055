/*
 * fstcrf_bandit.h -- the bandit learner's per-minibatch work in C: draws with
 * their posteriors, the score-function gradient of weighted draws, and the
 * step at the features a minibatch touched (fstcrf.learn.bandit).
 *
 * Each function sequences the kernel's own pieces (ff_emissions,
 * fc_forward_backward, fc_sample_scaled, ff_accumulate, fu_apply) over a block
 * of consecutive sentences of a training set, so that a minibatch costs a few
 * calls instead of dozens of small ones; the arithmetic of each piece is
 * theirs.  Conventions as in fstcrf_kernel.h: shapes in brackets, no globals,
 * no allocation, caller-owned buffers, so calls on disjoint outputs may run
 * in parallel threads.
 */
#ifndef FSTCRF_BANDIT_H
#define FSTCRF_BANDIT_H

#include <stdint.h>

#include "fstcrf_kernel.h"
#include "fstcrf_features.h"
#include "fstcrf_update.h"

/* A training set: B sentences of N tokens, their predicate rows, the feature
 * dictionary and the model graph. */
typedef struct {
    const ff_dictionary *dictionary;
    const ff_tokens *tokens;       /* the rows of all N tokens */
    const int64_t *offsets;        /* [B+1] sentence offsets, from 0 */
    const int32_t *token_class;    /* [N] transition class of each token, or NULL (class 0) */
    const fc_graph *graph;         /* S states, E edges */
    const int32_t *edge_ids;       /* [S, S] the edge from state a to state b, -1: none */
} fb_set;

/* A minibatch, sentences bounds[0] .. bounds[Q]-1 (b sentences, n tokens), cut into
 * Q pieces (piece q: sentences bounds[q] .. bounds[q+1]-1, b_q sentences), under
 * weights sign * theta; this call does pieces piece_begin .. piece_end-1, one after
 * the other (calls on disjoint ranges of pieces, each with its own ws and work, may
 * run in parallel threads).  Each piece is a block of its own:
 *   bounds     [Q+1]     sentence indices of the set, ascending
 *   theta      [F]       feature weights; the transition scores are sc's (already signed)
 *   offsets    [b + Q]   WRITTEN: piece q's sentence offsets [b_q + 1], from 0, at
 *                        bounds[q] - bounds[0] + q
 *   emit       [n, S]    WRITTEN: the emissions
 *   log_z      [b]       WRITTEN
 *   marg       [n, S]    WRITTEN: the state marginals
 *   edge_counts [b, C, E] OVERWRITTEN: each sentence's expected edge uses
 *   paths      [K, n]    WRITTEN: K exact draws, draw r of the i-th sentence of piece q
 *                        seeded as fc_sample's with (seed + q, first_index 0)
 *   ws, work   [S + L]   scratch
 *   step_state [F, W]    the step state fb_step will read (fb_step's state, W = 1 or 2) or
 *                        NULL: its cache lines at the pieces' features are asked for while
 *                        the posteriors are computed (a hint, with no effect on results)
 * The draws are fc_sample_scaled's (fc_sample's distribution, seeding and uniforms), made
 * from the forward table of each sentence's posteriors.
 * Returns FC_OK, or the status of the first piece that fails (fc_sample_scaled's). */
int fb_draw(const fb_set *set, const int64_t *bounds, int32_t num_pieces, int32_t piece_begin, int32_t piece_end,
            const fc_scores *sc, const double *theta, double sign, uint64_t seed, int32_t num_draws,
            int64_t *offsets, double *emit, double *log_z, double *marg, double *edge_counts, int32_t *paths,
            fc_workspace *ws, double *work, const double *step_state, int32_t state_width);

/* The feature part of the score-function gradient of weighted draws of the
 * pieces piece_begin .. piece_end-1 of a minibatch (bounds [Q+1] as fb_draw's; b
 * sentences, n tokens) whose posteriors fb_draw wrote (offsets [b + Q], marg
 * [n, S]), and the draws' weighted edge uses:
 *   coef   [K, b] the weight c[k, i] of draw k of sentence i
 *   paths  [K, n] the draws' states
 *   marks  [n, S] scratch (the rows of these pieces' tokens): the marginals times
 *          -w_i, with w_i = c[0, i] + ... + c[K-1, i] summed in that order, plus
 *          c[k, i] at each draw k's state (added in the order of k)
 *   at     [P] the layout of the gradients (ff_accumulate_at's: fb_index's), or NULL:
 *          each is [F]
 *   grads  [Q] pointers to [F] or [U] gradients: piece q's ADDED TO grads[q], sign *
 *          (feature counts of its tokens under marks), by ff_accumulate_at
 *   work   [S + L] scratch
 *   counts [K, C, E] ADDED TO, or NULL (not counted): counts[k, c, e] += c[k, i] for
 *          each use of edge e into a token of class c by draw k of sentence i of the
 *          whole minibatch, in token order
 * Returns FC_BAD_ARGUMENT, before touching any output, if a state of the minibatch's
 * draws lies outside [0, S) or two consecutive states of a sentence are joined by no
 * edge, or, before touching grads[q], if a token of piece q uses a predicate the
 * layout lacks; else FC_OK. */
int fb_gradient(const fb_set *set, const int64_t *bounds, int32_t num_pieces, int32_t piece_begin,
                int32_t piece_end, int32_t num_draws, const double *coef, const int32_t *paths,
                const int64_t *offsets, const double *marg, double sign, double *marks, const int64_t *at,
                double *const *grads, double *work, int32_t num_classes, double *counts);

/* Gradient buffers (pieces of a minibatch) fb_index and fb_step handle at most. */
#define FB_MAX_PIECES 8

/* The compact layout of a minibatch's gradient: the predicates of token rows
 * piece_rows[0] .. piece_rows[Q]-1, ascending, with the features of the i-th
 * at U_i .. U_i + ptr[p+1] - ptr[p] - 1 (U_i the features of the ones before).
 *   seen      [Q + 1, ceil(P / 64)] scratch bits, all 0 on entry and on return
 *   order     [P] WRITTEN: order[0 .. m-1], the predicates, ascending
 *   pieces_of [P] WRITTEN: bit q of pieces_of[i] is set if rows piece_rows[q] ..
 *             piece_rows[q+1]-1 use order[i]
 *   at        [P] -1 at every predicate on entry; WRITTEN: at[order[i]] = U_i
 *             (fb_step sets them back to -1)
 *   sizes     [2] WRITTEN: m, and U, the features of the m predicates
 * A minibatch's gradient buffers need U doubles each, not F.
 * Returns FC_BAD_ARGUMENT, before writing, for Q outside [1, FB_MAX_PIECES],
 * piece rows that do not ascend within the set's tokens, or a predicate of
 * theirs outside [0, P). */
int fb_index(const fb_set *set, const int64_t *piece_rows, int32_t num_pieces, uint64_t *seen, int32_t *order,
             uint8_t *pieces_of, int64_t *at, int64_t *sizes);

/* The step at the features of predicates order[begin] .. order[end-1] of an
 * index fb_index made: each feature f of predicate p once, in that order, moved
 * by fu_apply's rule with the gradient g = 0 + buffers[q][at[p] + k] + ...
 * summed in the order of q over the pieces q set in pieces_of (the other
 * buffers hold 0 there), k = f - ptr[p]; the buffers are then cleared there and
 * at[p] set back to -1 (calls on disjoint ranges of the order may run in
 * parallel threads).
 *   buffers  [Q] pointers to [U] gradients laid out by at, 1 <= Q <= FB_MAX_PIECES
 *   theta    [F + T] the weights: the features' first, then the T transitions'
 *   state    the rule's state: NULL (constant), the squares [F] (adagrad), or the
 *            (moment, square) pairs [F, 2] (adam: fu_apply's moments and squares
 *            interleaved, so that a feature's state is one cache line, not two)
 *   transitions [T] the transitions' gradient, or NULL (not stepped): after the
 *            features, theta[F + j] is moved by fu_apply with it, squares [T] and
 *            moments [T] (NULL where the rule keeps none), and it is cleared
 * Returns FC_BAD_ARGUMENT, before writing, for Q outside [1, FB_MAX_PIECES], a
 * piece bit at or above Q, or a predicate the layout lacks; else fu_apply's status. */
int fb_step(const fb_set *set, const int32_t *order, const uint8_t *pieces_of, int64_t begin, int64_t end,
            int64_t *at, double *const *buffers, int32_t num_pieces, const fu_step *step, double *theta,
            double *state, double *transitions, int64_t num_transitions, double *squares, double *moments);

/* The simulated user's per-sentence chunk F1 (conlleval's chunks by rule tables) of
 * K label sequences of b sentences (n tokens) of a gold set, against their gold ones:
 *   gold       [N]       label ids in [0, L) of the set's B sentences, cut at
 *   gold_offsets [B+1]   (from 0 to N, non-decreasing)
 *   sentences  [b]       which of them, in [0, B): predicted holds their tokens in this order
 *   predicted  [K, n]    label ids in [0, L), n the lengths of those sentences summed
 *   outside    L, the id of the implicit O around a sentence
 *   starts, ends [L+1, L+1]  1 where a chunk starts at label b after label a, or
 *                        ends between labels a and b
 *   kind       [L+1]     the chunk type of each label
 *   f1         [K, b]    WRITTEN: 2 matched / (gold + predicted chunks), 1 where
 *                        neither side has a chunk; a chunk matches when it starts
 *                        and ends at the same tokens with the same type
 * Returns FC_BAD_ARGUMENT, before writing, for gold offsets that do not cut N tokens,
 * a sentence outside [0, B), lengths that do not sum to n, or a label id (of the b
 * sentences) outside [0, L). */
int fb_chunk_f1(const int64_t *gold, int64_t gold_tokens, const int64_t *gold_offsets, int64_t gold_sentences,
                const int64_t *sentences, int64_t num_sentences, const int64_t *predicted, int64_t n,
                int32_t num_draws, int64_t outside, const uint8_t *starts, const uint8_t *ends, const int64_t *kind,
                double *f1);

#endif
