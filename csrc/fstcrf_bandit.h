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
 *   marg       [n, S]    WRITTEN: the state marginals; or NULL: none, and no backward pass
 *   edge_counts [b, C, E] OVERWRITTEN: each sentence's expected edge uses (not read when
 *                        marg is NULL)
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

/* Gradient buffers (pieces of a minibatch) fb_index and fb_step handle at most. */
#define FB_MAX_PIECES 8

/* The compact layout of a minibatch's gradient, with its scratch and its Q gradient
 * buffers, owned by the caller and kept from one minibatch to the next: fb_index
 * makes it, fb_gradient adds to its buffers, fb_step steps from them and undoes it.
 * The predicates of the minibatch come in ascending order, the features of the i-th
 * at U_i .. U_i + ptr[p+1] - ptr[p] - 1 of each buffer (U_i the features of the ones
 * before), so that a buffer needs the minibatch's U doubles, not F. */
typedef struct {
    int32_t num_predicates;   /* P, the dictionary's */
    int32_t num_buffers;      /* Q, 1 .. FB_MAX_PIECES: the most pieces of a minibatch */
    uint64_t *seen;           /* [Q + 1, ceil(P / 64)] scratch bits, all 0 between calls */
    int32_t *order;           /* [P] order[0 .. m-1]: the layout's predicates, ascending */
    uint8_t *pieces_of;       /* [P] bit q of pieces_of[i] is set if piece q uses order[i] */
    int64_t *at;              /* [P] at[order[i]] = U_i; -1 at every other predicate */
    double *const *buffers;   /* [Q] pointers to the gradients [U] laid out by at */
    int64_t used_predicates;  /* m, written by fb_index */
    int64_t used_features;    /* U, written by fb_index */
} fb_layout;

/* The layout of the gradient of token rows piece_rows[0] .. piece_rows[Q']-1
 * (piece q's rows piece_rows[q] .. piece_rows[q+1]-1), made in `layout`, whose at is
 * -1 everywhere on entry (fb_step sets it back); WRITTEN: its order, pieces_of, at,
 * used_predicates and used_features.
 * Returns FC_BAD_ARGUMENT, before writing, for Q' outside [1, Q], a layout of
 * another P, piece rows that do not ascend within the set's tokens, or a predicate
 * of theirs outside [0, P). */
int fb_index(const fb_set *set, fb_layout *layout, const int64_t *piece_rows, int32_t num_pieces);

/* The feature part of the score-function gradient of weighted draws of the
 * pieces piece_begin .. piece_end-1 of a minibatch (bounds [Q+1] as fb_draw's; b
 * sentences, n tokens) whose posteriors fb_draw wrote (offsets [b + Q], marg
 * [n, S], or NULL), and the draws' weighted edge uses:
 *   coef   [K, b] the weight c[k, i] of draw k of sentence i
 *   paths  [K, n] the draws' states
 *   marks  [n, S] scratch (the rows of these pieces' tokens): the marginals times
 *          -w_i, with w_i = c[0, i] + ... + c[K-1, i] summed in that order, plus
 *          c[k, i] at each draw k's state (added in the order of k); with marg
 *          NULL, 0 plus those: the expectation term is left out, as it cancels
 *          when each sentence's coefficients sum to 0
 *   layout fb_index's layout of the minibatch: piece q's ADDED TO its buffer q, sign *
 *          (feature counts of its tokens under marks), by ff_accumulate_at at its at
 *   work   [S + L] scratch
 *   counts [K, C, E] ADDED TO, or NULL (not counted): counts[k, c, e] += c[k, i] for
 *          each use of edge e into a token of class c by draw k of sentence i of the
 *          whole minibatch, in token order
 * Returns FC_BAD_ARGUMENT, before touching any output, for a layout of another P or
 * if a state of the minibatch's draws lies outside [0, S) or two consecutive states
 * of a sentence are joined by no edge, or, before touching buffer q, if a token of
 * piece q uses a predicate the layout lacks; else FC_OK. */
int fb_gradient(const fb_set *set, const int64_t *bounds, int32_t num_pieces, int32_t piece_begin,
                int32_t piece_end, int32_t num_draws, const double *coef, const int32_t *paths,
                const int64_t *offsets, const double *marg, double sign, double *marks, const fb_layout *layout,
                double *work, int32_t num_classes, double *counts);

/* The step at the features of predicates order[begin] .. order[end-1] of the
 * layout fb_index made: each feature f of predicate p once, in that order, moved
 * by fu_apply's rule with the gradient g = 0 + buffers[q][at[p] + k] + ...
 * summed in the order of q over the pieces q set in pieces_of (the other
 * buffers hold 0 there), k = f - ptr[p]; the buffers are then cleared there and
 * at[p] set back to -1 (calls on disjoint ranges of the order may run in
 * parallel threads).
 *   theta    [F + T] the weights: the features' first, then the T transitions'
 *   state    the rule's state: NULL (constant), the squares [F] (adagrad), or the
 *            (moment, square) pairs [F, 2] (adam: fu_apply's moments and squares
 *            interleaved, so that a feature's state is one cache line, not two)
 *   transitions [T] the transitions' gradient, or NULL (not stepped): after the
 *            features, theta[F + j] is moved by fu_apply with it, squares [T] and
 *            moments [T] (NULL where the rule keeps none), and it is cleared
 * Returns FC_BAD_ARGUMENT, before writing, for a layout of another P, a piece bit
 * at or above Q or a predicate the layout lacks; else fu_apply's status. */
int fb_step(const fb_set *set, fb_layout *layout, int64_t begin, int64_t end, const fu_step *step, double *theta,
            double *state, double *transitions, int64_t num_transitions, double *squares, double *moments);

/* Reorder the m predicates of a layout fb_index made so that those piece 0 alone
 * uses come first, each group in its previous order, their pieces_of moved with
 * them; at and the buffers are left as they are, so fb_step gives the same results
 * whatever the order.  The thread that made piece 0's draws and gradient can then
 * step the first group, whose lines its caches hold, and another thread the rest.
 *   order_scratch [m], pieces_scratch [m]  scratch
 * Returns the size of the first group. */
int64_t fb_order_by_piece(fb_layout *layout, int32_t *order_scratch, uint8_t *pieces_scratch);

/* The simulated user's per-sentence chunk F1 (conlleval's chunks by rule tables) of
 * K label sequences of b sentences (n tokens) of a gold set, against their gold ones:
 *   gold       [N]       label ids in [0, L) of the set's B sentences, cut at
 *   gold_offsets [B+1]   (from 0 to N, non-decreasing; only the b sentences' are read)
 *   sentences  [b]       which of them, in [0, B): predicted holds their tokens in this order
 *   predicted  [K, n]    label ids in [0, L), n the lengths of those sentences summed
 *   outside    L, the id of the implicit O around a sentence
 *   starts, ends [L+1, L+1]  1 where a chunk starts at label b after label a, or
 *                        ends between labels a and b
 *   kind       [L+1]     the chunk type of each label
 *   f1         [K, b]    WRITTEN: 2 matched / (gold + predicted chunks), 1 where
 *                        neither side has a chunk; a chunk matches when it starts
 *                        and ends at the same tokens with the same type
 * Returns FC_BAD_ARGUMENT, before writing, for a sentence outside [0, B) or whose
 * gold offsets do not lie in [0, N] in order, lengths that do not sum to n, or a
 * label id (of the b sentences) outside [0, L). */
int fb_chunk_f1(const int64_t *gold, int64_t gold_tokens, const int64_t *gold_offsets, int64_t gold_sentences,
                const int64_t *sentences, int64_t num_sentences, const int64_t *predicted, int64_t n,
                int32_t num_draws, int64_t outside, const uint8_t *starts, const uint8_t *ends, const int64_t *kind,
                double *f1);

#endif
