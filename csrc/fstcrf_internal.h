/*
 * fstcrf_internal.h -- what the dynamic-program sources share; not part of
 * the API and not read by cffi (fstcrf_kernel.h is the contract).
 *
 *   fstcrf_chain.c      workspace sizing and layout, one pass over a sentence
 *                       in each semiring (chain_pass, scaled_pass)
 *   fstcrf_marginals.c  forward-backward (log Z, posteriors, edge counts),
 *                       max-marginals, the linear tables and span passes of
 *                       span probabilities
 *   fstcrf_chunks.c     entity probabilities and MBR candidates (fstcrf_chunks.h)
 *   fstcrf_search.c     Viterbi, span Viterbi, k best
 *   fstcrf_sampling.c   exact sampling and its generator
 *   fstcrf_joint.c      the joint kernel over composed chains
 *
 * Functions shared between these files carry the prefix fc__ and are
 * defined in fstcrf_chain.c; small helpers are static inline here.
 */
#ifndef FSTCRF_INTERNAL_H
#define FSTCRF_INTERNAL_H

#include "fstcrf_kernel.h"
#include "fstcrf_portable.h"

#include <math.h>
#include <stddef.h>

typedef enum { SEMIRING_LOG = 0, SEMIRING_MAX = 1, SEMIRING_SCALED = 2 } semiring;

/* The chain kernels' view of a caller's fc_workspace (fc__carve). */
typedef struct {
    double *alpha;      /* [t_max, S] forward table */
    double *beta;       /* [t_max, S] backward table */
    double *exp_emit;   /* [t_max, S] exp(emit[t, s] - emit_max[t]) */
    double *log_scale;  /* [t_max] log of the forward rescaling factor of token t */
    double *emit_max;   /* [t_max] max_s emit[t, s] */
    double *exp_trans;  /* [C, E] exp(trans[c, e] - trans_max) */
    double *exp_trans_out; /* [C, E] exp_trans[c, out_edge[k]]: the same in leaving-slot order */
    double *exp_start;  /* [S] exp(start[s] - start_max) */
    double *exp_final;  /* [S] exp(final[s] - final_max) */
    double *vec_a;      /* [S] scratch */
    double *vec_b;      /* [S] scratch */
    double *partial;    /* [4, S] scratch: four partial sums per state (fc__scaled_pass) */
    int32_t *lane;      /* [S] lane of the edges entering each state (fc__plan_lanes) */
    int lanes_ok;       /* 1 once fc__plan_lanes found lanes for every state */
    int32_t *block;     /* [S] at the first source of a block its number of sources, else 0 (fc__plan_blocks) */
    int32_t *entering;  /* [S] the first entering edge of each block's targets, block by block (fc__plan_blocks) */
    int blocks_ok;      /* 1 once fc__plan_blocks found blocks covering every state */
    double *kscore;     /* [t_max, S, k] k-best score lists */
    double *trans_push; /* [C, E] trans[c, out_edge[k]]: the scores in leaving-slot order (fc__prepare_push) */
    int push_ok;        /* 1 once fc__prepare_push filled trans_push for a complete graph */
    int32_t *backptr;   /* [t_max, S, k] k-best / Viterbi back pointers */
    double trans_max, start_max, final_max;
    int scaled_ok;      /* transition/start/final spreads allow SEMIRING_SCALED */
} buffers;

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */
/* ------------------------------------------------------------------------ */

/* Offset of the scores of the transition into token t in [C, E] tables, for a
 * sentence whose token classes are cls [T] (NULL: every token is of class 0). */
static inline int64_t trans_row(const int32_t *cls, int64_t t, int32_t E)
{
    return cls ? (int64_t)cls[t] * E : 0;
}

/* The largest of v [n] (NaN entries ignored; -inf for none), eight entries at a
 * time in four independent pairs so that no comparison waits on the last. */
static inline double max_of(const double *v, int32_t n)
{
    fc_pair m[4];
    for (int l = 0; l < 4; ++l) m[l] = fc_pair_set(-INFINITY);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 4; ++l) m[l] = fc_pair_max(fc_pair_load(v + i + 2 * l), m[l]);
    double lanes[8], best = -INFINITY;
    for (int l = 0; l < 4; ++l) fc_pair_store(lanes + 2 * l, m[l]);
    for (int k = 0; k < 8; ++k) best = lanes[k] > best ? lanes[k] : best;
    for (; i < n; ++i) best = v[i] > best ? v[i] : best;
    return best;
}

/* y[k] += a * x[k] for k < n. */
static inline void axpy(double a, const double *x, double *y, int32_t n)
{
    FC_SIMD
    for (int32_t k = 0; k < n; ++k) y[k] += a * x[k];
}

/* log sum_i exp(v[i]), exact for any finite or -inf entries. */
static inline double log_sum_exp(const double *v, int32_t n)
{
    const double m = max_of(v, n);
    if (m == -INFINITY) return -INFINITY;
    double s = 0.0;
    for (int32_t i = 0; i < n; ++i) s += exp(v[i] - m);
    return m + log(s);
}

/* ------------------------------------------------------------------------ */
/* fstcrf_chain.c                                                            */
/* ------------------------------------------------------------------------ */

/* FC_OK, or FC_BAD_ARGUMENT for an empty state space, no classes, a workspace
 * made for fewer than k best or a sentence that is empty or longer than it. */
int fc__check_workspace(const fc_graph *g, const fc_scores *sc, const fc_batch *b,
                        const fc_workspace *ws, int32_t k);

/* Lay the buffers out in ws (see fc_workspace_doubles). */
buffers fc__carve(const fc_graph *g, const fc_scores *sc, fc_workspace *ws);

/* out [n] = exp(v[i] - max v); returns max v; *ok cleared if a finite entry
 * is more than SCALED_SPREAD below the max. */
double fc__exp_shifted(const double *v, int32_t n, double *out, int *ok);
/* fc__exp_shifted of a row whose entries fall in classes (cls [n], in [0, k)): an
 * entry equal to the last one of its class seen reuses that one's exp (scratch
 * [2k]); the same results, one exp for a run of equal scores of a class. */
double fc__exp_shifted_by_class(const double *v, int32_t n, const int32_t *cls, int32_t k, double *scratch,
                                double *out, int *ok);

/* Fill the batch-wide exponentiated scores of w (exp_trans, exp_trans_out,
 * exp_start, exp_final, their maxima and scaled_ok). */
void fc__prepare_transitions(const fc_graph *g, const fc_scores *sc, buffers *w);
/* Fill w->trans_push and set push_ok when the graph is complete and pushing pays:
 * the batch has at least C tokens (num_tokens), so that copying the C rows of scores
 * costs less than it saves.  The forward max pass of fc__chain_pass then pushes
 * each source along its leaving row (fc__push_max), which vectorises, in place of
 * pulling each state's entering sources one by one: the same maxima and back
 * pointers (the sources are taken in ascending order, the first among ties kept). */
void fc__prepare_push(const fc_graph *g, const fc_scores *sc, int64_t num_tokens, buffers *w);
/* Plan the backward scaled pass by entering edges: the backward sum of state i
 * runs over its leaving slots with four partial sums (slot r of n joins sum
 * r % 4, or sum 0 for the last n % 4 slots).  If every state's entering sources
 * are consecutive and its entering edges all join the same partial sum
 * lane[j] (second-order chains: a state (b, c) is entered from (a, b) for
 * every a), lane [S] is filled and lanes_ok set, and fc__scaled_pass adds the
 * same products in the same order by scattering each state's value along its
 * entering edges, a contiguous run of sources; otherwise lanes_ok stays 0. */
void fc__plan_lanes(const fc_graph *g, buffers *w);

/* For every state x:  out[x] = (+)_{slots k of x} v[nbr[k]] (*) trans[edge(k)]
 * over the CSR rows ptr [S+1] / nbr [E] / edge [E] (edge == NULL means the
 * slot number is the edge id), with trans [E] one row of transition scores
 * and exp_weight [E] the same row exponentiated (less trans_max) in slot
 * order; scaled_v [S] is scratch.  In the max semiring arg[x] receives the
 * arg-max neighbour (first one among ties), or -1.  sr is SEMIRING_LOG or
 * SEMIRING_MAX. */
void fc__reduce_edges(semiring sr, int32_t S, const int32_t *ptr, const int32_t *nbr,
                      const int32_t *edge, const double *v, const double *trans,
                      const double *exp_weight, double trans_max, double *scaled_v,
                      double *out, int32_t *arg);

/* Fill table [T, S] for one sentence with emissions emit [T, S] and token
 * classes cls [T] (or NULL), in SEMIRING_LOG or SEMIRING_MAX.
 * Forward:  table[t, s] = (+) over paths of tokens 0..t ending in s.
 * Backward: table[t, s] = (+) over continuations from s at t to the end,
 *           excluding emit[t, s] and including final scores.
 * backptr [T, S] (max semiring, may be NULL) gets the arg-max predecessor
 * (forward) or successor (backward) of each state, -1 where there is none;
 * the row of the first (forward) or last (backward) token is left unset. */
void fc__chain_pass(semiring sr, int backward, const fc_graph *g, const fc_scores *sc,
                    const int32_t *cls, const double *emit, int64_t T, const buffers *w,
                    double *table, int32_t *backptr);

/* Divide row [S] by its maximum m and set *log_factor = log m.  Returns 0 if
 * the row is all zero or a non-zero entry is below SCALED_FLOOR * m. */
int fc__rescale(double *row, int32_t S, double *log_factor);

/* The linear-domain pass (SEMIRING_SCALED) over one sentence whose exp_emit
 * and emit_max rows are filled.  Forward: table [T, S] row t is alpha_t
 * divided by exp(sum_{u<=t} log_scale[u]) and by the emission, transition
 * and start maxima factored out.  Backward: table[t] is proportional to
 * beta_t (its scale is not kept; posteriors are normalised per token).
 * Returns 0 if a check fails, and the caller redoes the sentence in the log
 * domain. */
int fc__scaled_pass(int backward, const fc_graph *g, const buffers *w, const int32_t *cls,
                    int64_t T, double *table);

/* Score of the best (SEMIRING_MAX) or total (SEMIRING_LOG) of all complete
 * paths from the last forward row last_row [S]; scratch [S].  In the max
 * semiring *arg (unless arg is NULL) gets the best last state, or -1. */
double fc__close_paths(semiring sr, const double *last_row, const double *final,
                       int32_t S, double *scratch, int32_t *arg);

/* ------------------------------------------------------------------------ */
/* fstcrf_blocks.c                                                           */
/* ------------------------------------------------------------------------ */

/* Plan the tiled passes: if the graph is made of complete bipartite blocks
 * (see fstcrf_blocks.c) whose rows are not dense (fewer than S slots), fill
 * block [S] and set blocks_ok; otherwise blocks_ok stays 0. */
void fc__plan_blocks(const fc_graph *g, buffers *w);

/* fc__scaled_pass's forward step over a planned graph: row [S] = (prev [S]
 * through the transitions m_out [E], in leaving-slot order) times e [S];
 * sums [S] is scratch. */
void fc__forward_blocks(const fc_graph *g, const buffers *w, const double *prev, const double *m_out,
                        const double *e, double *sums, double *row);

/* fc__scaled_pass's backward step over a planned graph: row [S] = the
 * transitions m_in [E] (entering-edge order) times v [S]; gathered [S] is
 * scratch. */
void fc__backward_blocks(const fc_graph *g, const buffers *w, const double *v, const double *m_in,
                         double *gathered, double *row);

/* scaled_edge_counts (fstcrf_marginals.c) over a planned graph for a sentence
 * of T tokens whose tokens are all of class 0. */
void fc__edge_count_blocks(const fc_graph *g, const buffers *w, int64_t T, double *edge_counts);

/* ------------------------------------------------------------------------ */
/* fstcrf_marginals.c, fstcrf_sampling.c                                     */
/* ------------------------------------------------------------------------ */

/* fc_forward_backward's work on one sentence of T tokens, emissions emit [T, S]
 * and classes cls [T] (or NULL), in buffers w whose transitions are prepared
 * and blocks planned (or, where there are none, lanes when node_marg or
 * edge_counts is given): WRITTEN *log_z, node_marg [T, S] (or NULL), ADDED TO
 * edge_counts [C, E] (or NULL).  Returns -1 if the sentence has no path, else
 * whether w->alpha holds the scaled forward table (1) or the log-domain one
 * (0). */
int fc__sentence_posteriors(const fc_graph *g, const fc_scores *sc, buffers *w, const double *emit,
                            const int32_t *cls, int64_t T, double *log_z, double *node_marg, double *edge_counts);

/* fc_sample_scaled's draws of one sentence (its index-th, T tokens, emissions
 * emit [T, S], classes cls [T] or NULL), draw r at samples + r * N, in buffers w
 * whose transitions are prepared.  With `scaled_table` w->alpha already holds
 * the sentence's scaled forward table (fc__sentence_posteriors returned 1) and
 * is read as it is; otherwise the table is made as fc_sample_scaled makes it.
 * Returns FC_OK or FC_INFEASIBLE. */
int fc__sample_scaled_sentence(int scaled_table, const fc_graph *g, const fc_scores *sc, buffers *w,
                               const double *emit, const int32_t *cls, int64_t T, uint64_t seed, int64_t index,
                               int32_t num_samples, int64_t N, int32_t *samples);

/* ------------------------------------------------------------------------ */
/* fstcrf_marginals.c: linear-domain tables and chunk passes (fstcrf_chunks.c) */
/* ------------------------------------------------------------------------ */

/* Linear-domain forward and backward tables of one sentence, rows off .. last,
 * each row rescaled to sum 1 (the tables of span probabilities).  Every weight is
 * linear (not a log score) and b->emit holds the emission weights psi [N, S]:
 *   weight [C, E]  weight of edge e into a token of class c
 *   start, final [S]
 * Outputs:
 *   alpha [N, S]     the mass of the paths through each state of token n, from
 *                    the sentence's start (start and psi included), rescaled
 *   beta  [N, S]     the mass of the paths from each state of token n to the end
 *                    (the later tokens' edges and psi, and final), rescaled
 *   log_prefix [N]   log of the scale alpha's row n was divided by, times those
 *                    of the rows before it in the sentence
 *   log_suffix [N]   the same for beta, from the sentence's last token back to n
 * Returns 1 when every row had a mass of at least 1e-100 before it was rescaled:
 * the weights it dropped by underflow then weigh less than 1e-200 of the row, and
 * its rows are exact to rounding; 0 otherwise (the weights span too wide a range
 * for the linear domain, as at a small temperature), the rows then partly written
 * for the caller to redo in the log domain. */
int fc__scaled_sentence(const fc_graph *g, const double *weight, const double *start, const double *final,
                        const fc_batch *b, int64_t off, int64_t last, double *alpha, double *beta,
                        double *log_prefix, double *log_suffix);

/* What a chunk's pass reads: the linear scores and a batch's scaled tables
 * (fc__scaled_sentence), and the chunk reading of the states and edges. */
typedef struct {
    const double *weight, *start, *final;
    const double *alpha, *beta, *log_prefix, *log_suffix;
    const int32_t *state_type;
    const uint8_t *continuing;
} fc__span_tables;

/* The probability out[j] that a chunk of type x spans rows row .. row + j of the
 * sentence whose rows are off .. last (log Z log_z in the tables' units), for j = 0
 * .. reach, each at most 1 (mass [2S] scratch).  A chunk of type x enters a state s
 * with state_type[s] == x by an edge that does not continue (continuing[e] == 0; at
 * the sentence's first token, by start), keeps to states of type x by continuing
 * edges, and leaves by an edge that does not continue (or ends the sentence).  Its
 * mass is a vector over the states carried a token at a time, so the values of one
 * pass do not depend on any other, nor on how far it reaches. */
void fc__span_pass(const fc_graph *g, const fc_batch *b, const fc__span_tables *t, int64_t off, int64_t last,
                   double log_z, int32_t x, int64_t row, int64_t reach, double *out, double *mass);

#endif
