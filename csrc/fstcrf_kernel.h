/*
 * fstcrf_kernel.h -- dense dynamic programs over a linear-chain lattice.
 *
 * The kernel knows nothing about features, labels or FSTs.  It sees a state
 * space of S states, a set of E allowed transitions (edges) between states,
 * and per-sentence emission scores.  A path y_1..y_T (states) scores
 *
 *     start[y_1] + emit[1, y_1]
 *       + sum_{t=2..T} (trans[e(y_{t-1}, y_t)] + emit[t, y_t])
 *       + final[y_T]
 *
 * and is allowed iff start[y_1] > -inf, every (y_{t-1}, y_t) is an edge and
 * final[y_T] > -inf.  All scores are natural-log potentials.  The transition
 * scores may differ from token to token: each token has a class c (for
 * example the label a lower tagger gives it) and the transition into it
 * scores trans[c, e].
 *
 * Conventions
 *   - Every function handles a batch of B sentences concatenated along the
 *     token axis: sentence b owns rows offsets[b] .. offsets[b+1]-1 of every
 *     [N, ...] array.  N = offsets[B].
 *   - Arrays are C-contiguous, row-major.  Shapes are given in brackets.
 *   - No globals, no allocation, no CPython API: every buffer is owned by the
 *     caller (see fc_workspace), so calls from several threads may run at once
 *     as long as each thread has its own workspace and outputs.
 *   - The caller validates input (finite scores, in-range indices, feasible
 *     lengths).  Functions return FC_OK, or FC_INFEASIBLE if a sentence has no
 *     allowed path (its outputs are then left as documented per function).
 */
#ifndef FSTCRF_KERNEL_H
#define FSTCRF_KERNEL_H

#include <stdint.h>

#define FC_OK 0
#define FC_INFEASIBLE 1
#define FC_BAD_ARGUMENT 2

/* Allowed transitions, stored twice as compressed sparse rows.
 * Edges are numbered in destination-major order: the edges entering state j
 * are in_ptr[j] .. in_ptr[j+1]-1, with sources in_src[...] ascending; the
 * slots leaving state i are out_ptr[i] .. out_ptr[i+1]-1, with destinations
 * out_dst[...] ascending.  (A row of S entries therefore lists every state in
 * order, which the kernel uses for dense fast paths.) */
typedef struct {
    int32_t num_states;      /* S */
    int32_t num_edges;       /* E */
    const int32_t *in_ptr;   /* [S+1] first edge entering each state */
    const int32_t *in_src;   /* [E]   source state of edge e */
    const int32_t *out_ptr;  /* [S+1] first slot of the edges leaving each state */
    const int32_t *out_dst;  /* [E]   destination state of the k-th leaving slot */
    const int32_t *out_edge; /* [E]   edge id of the k-th leaving slot */
} fc_graph;

/* Scores shared by every sentence of a batch. */
typedef struct {
    const double *trans;     /* [C, E] score of edge e into a token of class c */
    const double *start;     /* [S] start score, -INFINITY where a path may not start */
    const double *final;     /* [S] final score, -INFINITY where a path may not end */
    int32_t num_classes;     /* C >= 1 */
    const int32_t *emit_class; /* [S] class in [0, K) of each state, or NULL: a hint that
                                  states of one class often have equal emission scores (the
                                  states of one label in order 2): the forward-backward then
                                  takes one exp for the states of a class whose scores are
                                  equal (the same results, fewer exps) */
    int32_t num_emit_classes;  /* K, 1 <= K <= S, read only with emit_class */
} fc_scores;

/* A batch of sentences. */
typedef struct {
    int32_t num_sequences;   /* B */
    const int64_t *offsets;  /* [B+1] token offsets, offsets[0] = 0, strictly increasing */
    const double *emit;      /* [N, S] emission score of state s at token n */
    const int32_t *token_class; /* [N] class of token n in [0, C) (read at tokens other than
                                   a sentence's first), or NULL: every token is of class 0 */
} fc_batch;

/* Caller-owned scratch space; size it with fc_workspace_doubles/ints for the
 * longest sentence of the batch (t_max) and the k of fc_kbest (3 for
 * fc_span_viterbi, 1 otherwise). */
typedef struct {
    int64_t t_max;           /* longest sentence the buffers can hold */
    int32_t k;               /* list length the k-best buffers can hold */
    double *doubles;         /* [fc_workspace_doubles(S, E, C, t_max, k)] */
    int32_t *ints;           /* [fc_workspace_ints(S, E, t_max, k)] */
} fc_workspace;

int64_t fc_workspace_doubles(int32_t S, int32_t E, int32_t C, int64_t t_max, int32_t k);
int64_t fc_workspace_ints(int32_t S, int32_t E, int64_t t_max, int32_t k);

/* Sum-product forward-backward.
 *   log_z       [B]    log partition function of each sentence (-INFINITY if infeasible)
 *   node_marg   [N, S] p(y_t = s | x), or NULL to skip
 *   edge_counts [C, E] ADDED TO: sum over the batch of the expected uses of edge e
 *                      into a token of class c, or NULL
 * With node_marg and edge_counts NULL only the forward pass runs. */
int fc_forward_backward(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                        double *log_z, double *node_marg, double *edge_counts,
                        fc_workspace *ws);

/* fc_forward_backward with each sentence's expected edge counts kept apart:
 *   edge_counts [B, C, E] ADDED TO: sentence i's expected uses of edge e into
 *                         a token of class c, or NULL
 * (for estimators that weigh each sentence's expectation by its own factor). */
int fc_forward_backward_each(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                             double *log_z, double *node_marg, double *edge_counts,
                             fc_workspace *ws);

/* Max-product (Viterbi) decoding.
 *   path  [N]  best state at each token (ties: the path whose state sequence,
 *              read from the last token backwards, is smallest)
 *   score [B]  its score (-INFINITY and path -1 if infeasible) */
int fc_viterbi(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
               int32_t *path, double *score, fc_workspace *ws);

/* Max-marginals: max_marg[n, s] = best score of any path through state s at
 * token n (-INFINITY if none).  best [B] = the Viterbi score. */
int fc_max_marginals(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                     double *max_marg, double *best, fc_workspace *ws);

/* Log-domain forward and backward tables, exact to rounding for any finite
 * scores (the tables of span probabilities for the sentences the linear domain
 * of fstcrf_chunks.h cannot hold, fstcrf.engine.spans):
 *   log_alpha [N, S]  log of the mass of the paths from the sentence's start to
 *                     state s at token n (start and emissions up to n included)
 *   log_beta  [N, S]  log of the mass of the paths from state s at token n to
 *                     the end (the later tokens' edges and emissions, and final)
 * Returns FC_OK (or FC_BAD_ARGUMENT for a workspace too small). */
int fc_log_tables(const fc_graph *g, const fc_scores *sc, const fc_batch *b, double *log_alpha, double *log_beta,
                  fc_workspace *ws);

/* Span Viterbi: for each of K spans, the best path that keeps to a set of
 * allowed states at every token of the span, and the best path that leaves
 * that set at some token of it.  Span k covers tokens span_first[k] ..
 * span_first[k] + span_length[k] - 1 of sentence span_sentence[k] (indices
 * within the sentence).  Spans are sorted by sentence, so that the tables of a
 * sentence are computed once (O(T E)), and may overlap; each span then costs
 * O(span_length E).  The workspace is sized with k = 3.
 *   span_sentence [K]    sentence of span k, non-decreasing
 *   span_first    [K]    first token of span k, >= 0
 *   span_length   [K]    number of tokens of span k, >= 1, inside the sentence
 *   mask_offsets  [K+1]  span k owns rows mask_offsets[k] .. mask_offsets[k+1]-1
 *                        of allowed, one per token; mask_offsets[0] = 0
 *   allowed       [R, S] allowed[mask_offsets[k] + i, s] != 0 iff state s is
 *                        allowed at token span_first[k] + i of span k
 *   path_offsets  [K+1]  span k owns rows path_offsets[k] .. path_offsets[k+1]-1
 *                        of the paths, as many as its sentence has tokens;
 *                        path_offsets[0] = 0
 *   inside        [K]    best score of a path allowed at every token of span k
 *   outside       [K]    best score of a path not allowed at some token of span k
 *   inside_path   [P]    a path scoring inside[k] (states of the whole sentence),
 *                        or NULL
 *   outside_path  [P]    a path scoring outside[k], or NULL
 * with R = mask_offsets[K] and P = path_offsets[K].  A score without a path is
 * -INFINITY and its path -1 throughout.  Scores are max-plus sums of the input
 * scores; a returned path's own score equals them up to rounding (its prefix
 * is added forwards, its suffix backwards).  Ties are broken deterministically.
 * Returns FC_BAD_ARGUMENT, writing nothing, for spans out of range or out of
 * order and inconsistent offsets; FC_INFEASIBLE if the sentence of a span has
 * no allowed path. */
int fc_span_viterbi(const fc_graph *g, const fc_scores *sc, const fc_batch *b, int32_t num_spans,
                    const int32_t *span_sentence, const int64_t *span_first,
                    const int64_t *span_length, const int64_t *mask_offsets,
                    const uint8_t *allowed, const int64_t *path_offsets, double *inside,
                    double *outside, int32_t *inside_path, int32_t *outside_path,
                    fc_workspace *ws);

/* The k best paths of every sentence, best first, exact; ties ordered as in
 * fc_viterbi.
 *   paths  [k, N] paths[r, n] = state at token n on the r-th best path (-1 if absent)
 *   scores [B, k] their scores (-INFINITY if absent)
 *   found  [B]    number of paths found (< k when fewer paths exist) */
int fc_kbest(const fc_graph *g, const fc_scores *sc, const fc_batch *b, int32_t k,
             int32_t *paths, double *scores, int32_t *found, fc_workspace *ws);

/* Exact samples from p(y | x) by forward filtering, backward sampling.
 *   samples [num_samples, N] samples[r, n] = state at token n in draw r
 * Draw r of sentence b uses a generator seeded from (seed, first_index + b, r),
 * so results do not depend on how a corpus is split into batches. */
int fc_sample(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
              uint64_t seed, int64_t first_index, int32_t num_samples,
              int32_t *samples, fc_workspace *ws);

/* fc_sample's distribution and seeding, drawn backwards from the linear-domain
 * forward table of fc_forward_backward's scaled pass (no exp or log per step)
 * wherever a sentence's scores allow that pass, else as fc_sample draws: the
 * same distribution, different draws from the same seed. */
int fc_sample_scaled(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                     uint64_t seed, int64_t first_index, int32_t num_samples,
                     int32_t *samples, fc_workspace *ws);

/* ------------------------------------------------------------------------ */
/* Joint decoding of composed chains (Sutton & McCallum 2005)               */
/* ------------------------------------------------------------------------ */

/* N component chains over the product state space S_0 x ... x S_{N-1};
 * P = prod S_k joint states, indexed row-major (the last component varies
 * fastest).  Component k's transition score may depend on the NEW state of
 * component k-1 at the same token, f(s^k_{t-1}, s^k_t, s^{k-1}_t):
 * trans[k] is [L_k, E_k] with L_0 = 1 and L_k = S_{k-1}.  A joint transition
 * scores the sum over components, so a step sums out one component at a
 * time, costing sum_k (P / S_k) E_k per token instead of P^2.  Emission
 * scores are joint: emit [N, P]. */
typedef struct {
    int32_t num_components;       /* N */
    const fc_graph *graphs;       /* [N] component graphs */
    const double *const *trans;   /* [N] trans[k] is [L_k, E_k] */
    const double *start;          /* [P] joint start score, -INFINITY where forbidden */
    const double *final;          /* [P] joint final score, -INFINITY where forbidden */
    const uint8_t *allowed;       /* [P] 0 for joint states excluded by a compatibility relation, or NULL */
} fc_joint;

int64_t fc_joint_workspace_doubles(const fc_joint *j, int64_t t_max);
int64_t fc_joint_workspace_ints(const fc_joint *j, int64_t t_max);

/* Sum-product over the joint space, in the linear domain with rescaling.
 *   log_z       [B]    log partition function
 *   node_marg   [N, P] joint posteriors, or NULL
 *   edge_counts [W]    ADDED TO, or NULL: W = sum_k L_k E_k, component k's
 *                      block [L_k, E_k] (at offset sum_{i<k} L_i E_i) holds
 *                      the expected number of transitions that use edge e of
 *                      component k while component k-1 is in state l at the
 *                      new token, summed over the batch's sentences (those
 *                      not redone) -- the gradient of log Z in trans[k]
 *   redo        [B]    set to 1 for a sentence whose scores spread too widely
 *                      for the linear domain (its outputs are then undefined,
 *                      nothing is added for it, and the caller must use an
 *                      exact log-domain method) */
int fc_joint_forward_backward(const fc_joint *j, const fc_batch *b, double *log_z,
                              double *node_marg, double *edge_counts, int32_t *redo,
                              fc_workspace *ws);

/* Joint Viterbi.  path [N] best joint state per token, score [B]. */
int fc_joint_viterbi(const fc_joint *j, const fc_batch *b, int32_t *path, double *score,
                     fc_workspace *ws);

#endif
